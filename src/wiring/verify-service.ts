/** `verifyservice` with its production parts: the TPM the node config names, the node's issuer, JSON logs. */
import { routeGrpcLogs } from '../lib/grpc/index.js'
import { loadNodeConfig, type NodeConfig } from '../lib/nodeconfig/index.js'
import { createLogger, serveUntilStopped, type Logger } from '../lib/system/index.js'
import { readPcrs } from '../lib/tpm/index.js'
import { VerifyServiceDaemon } from '../lib/verify/index.js'
import { nodeIssuer, openTpmFromConfig } from './node.js'

export function createVerifyService(config: NodeConfig, log: Logger): VerifyServiceDaemon {
  const openTpm = openTpmFromConfig(config.tpm)
  const checkTpm = () => readPcrs(openTpm, [0]).then(() => undefined)
  return new VerifyServiceDaemon(
    config.verifyService.listen,
    nodeIssuer(config, openTpm),
    log.child('verifyservice'),
    checkTpm,
  )
}

/** `verifyservice` itself: load the node config, serve until stopped. */
export async function runVerifyService(configPath: string): Promise<void> {
  const config = await loadNodeConfig(configPath)
  const log = createLogger({ format: 'json' })
  routeGrpcLogs(log)
  await serveUntilStopped(createVerifyService(config, log))
}
