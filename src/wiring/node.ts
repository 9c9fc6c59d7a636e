/** What every node daemon builds the same way from the node config: its TPM and its attestation issuer. */
import { createIssuer, type Issuer } from '../lib/attestation/index.js'
import type { NodeConfig } from '../lib/nodeconfig/index.js'
import { parseHostPort } from '../lib/system/index.js'
import { nodePaths } from '../lib/paths.js'
import { openSwtpm, openTpmDevice, type OpenTpm, type TpmConfig } from '../lib/tpm/index.js'

/** The TPM the node config names: swtpm's command port (tests, local clusters) or the device. */
export function openTpmFromConfig(tpm: TpmConfig): OpenTpm {
  if (tpm.swtpm !== undefined) {
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
  return createIssuer(config.attestationVariant, openTpm, {
    eventLogPath: nodePaths(config.root).tpmEventLog,
  })
}
