/** Production wiring of the bootstrapper: real TPM, cryptsetup, node:http(s) downloads, JSON logs, and aTLS with a TPM-backed issuer. */
import { createIssuer } from '../attestation/index.js'
import { createAttestedServerCredentials } from '../atls/index.js'
import { routeGrpcLogs } from '../grpc/index.js'
import { createLogger, createRunner } from '../system/index.js'
import { openTpmFromConfig } from '../tpm/index.js'
import { Bootstrapper, type BootstrapperConfig } from './daemon.js'
import { httpGet } from './http-get.js'
import { LogCollector } from './logs.js'

export function createNodeBootstrapper(
  config: BootstrapperConfig,
  writeLine: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): Bootstrapper {
  const openTpm = openTpmFromConfig(config.tpm)
  const logs = new LogCollector(writeLine)
  const log = createLogger({ format: 'json', write: logs.write, component: 'bootstrapper' })
  routeGrpcLogs(log)
  return new Bootstrapper(config, {
    openTpm,
    runner: createRunner(),
    httpGet,
    logs,
    log,
    credentials: createAttestedServerCredentials({
      issuer: createIssuer(config.attestationVariant, openTpm),
    }),
  })
}
