/** What every node daemon builds the same way from the node config: its TPM and its attestation issuer. */
import {
  createIssuer,
  isCvmVariant,
  readTrustRoots,
  type Issuer,
  type ValidatorOptions,
} from '../lib/attestation/index.js'
import { cvmValidationPolicy } from '../lib/config/index.js'
import { CliError } from '../lib/errors/index.js'
import { nodeCvmSettings, type NodeConfig } from '../lib/nodeconfig/index.js'
import { parseHostPort, unixSocketPath } from '../lib/system/index.js'
import { nodePaths } from '../lib/paths.js'
import { nodeCvmHardware } from './cvm-hardware.js'
import { openSwtpm, openSwtpmSocket, openTpmDevice, type OpenTpm, type TpmConfig } from '../lib/tpm/index.js'

/** The TPM the node config names: swtpm's command channel (tests, local clusters) or the device. */
export function openTpmFromConfig(tpm: TpmConfig): OpenTpm {
  if (tpm.swtpm !== undefined) {
    const socket = unixSocketPath(tpm.swtpm)
    if (socket !== undefined) return openSwtpmSocket(socket)
    const { host, port } = parseHostPort(tpm.swtpm, { requirePort: true })
    return openSwtpm(host, port)
  }
  return openTpmDevice(tpm.device)
}

/**
 * The node's attestation issuer. Its documents carry the boot's TCG event log when the node has one,
 * whichever service serves them: Constellation's validators replay it.
 */
export function nodeIssuer(
  config: Pick<NodeConfig, 'attestationVariant' | 'root'>,
  openTpm: OpenTpm,
): Issuer {
  const variant = config.attestationVariant
  return createIssuer(variant, openTpm, {
    eventLogPath: nodePaths(config.root).tpmEventLog,
    ...(isCvmVariant(variant) && { cvm: nodeCvmHardware(variant, config.root, openTpm) }),
  })
}

/**
 * What the node's validators (the join service's) need beyond measurements: tpm-ek's manufacturer
 * roots, or a confidential-VM variant's pinned vendor root and minimums.
 */
export function nodeValidatorOptions(
  config: Pick<NodeConfig, 'attestationVariant' | 'attestation'>,
): ValidatorOptions {
  if (isCvmVariant(config.attestationVariant)) {
    const settings = nodeCvmSettings(config)
    if (!settings)
      throw new CliError(
        `node config: attestationVariant ${config.attestationVariant} needs its section under attestation (the pinned vendor root and minimums) to validate joining nodes`,
        {
          hint: '`constellation config generate` writes the section for the workspace; the node needs the same, without measurements',
        },
      )
    return { cvm: cvmValidationPolicy(settings) }
  }
  if (config.attestationVariant !== 'tpm-ek') return {}
  const roots = config.attestation?.tpmEK?.roots
  if (!roots)
    throw new CliError(
      'node config: attestationVariant tpm-ek needs attestation.tpmEK.roots to validate joining nodes',
      {
        hint: "list the files of the TPM manufacturers' root CA certificates there",
      },
    )
  return {
    roots: roots.flatMap((file, i) => {
      try {
        return readTrustRoots(file, '/')
      } catch (cause: unknown) {
        throw new CliError(`node config: attestation.tpmEK.roots[${i}]: ${(cause as Error).message}`, {
          cause,
        })
      }
    }),
  }
}
