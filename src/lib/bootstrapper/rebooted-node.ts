/**
 * `bootstrap run` on a node bootstrapped in an earlier boot: state-disk setup reopened its disk and
 * put the cluster ID back into PCR 15, so there is nothing to initialize or join. The node starts
 * its kubelet (and, on a control plane, its key and join services) and the bootstrapper is done.
 */
import { CliError } from '../errors/index.js'
import { readNodeState, type NodeState } from '../nodeconfig/index.js'
import type { NodePaths } from '../paths.js'
import type { Logger, Runner } from '../system/index.js'
import { CONTROL_PLANE_UNITS, SYSTEMCTL_TIMEOUT_MS } from './control-plane-services.js'
import { NodeBootstrappedError } from './daemon.js'

export const KUBELET_UNIT = 'kubelet.service'

/**
 * The node state of a rebooted node; undefined for a node fresh from boot (PCR 15 zero). PCR 15 set
 * without a node state means something else set it: the node refuses, as it always did.
 */
export async function rebootedNodeState(
  readClusterIdPcr: () => Promise<Buffer | undefined>,
  paths: NodePaths,
): Promise<NodeState | undefined> {
  const pcr = await readClusterIdPcr()
  if (!pcr || pcr.every((b) => b === 0)) return undefined
  return readNodeState(paths).catch(() => {
    throw new NodeBootstrappedError(pcr)
  })
}

/** `controlPlaneServices: false` leaves a control plane's key and join services to the caller. */
export async function startRebootedNode(
  runner: Runner,
  state: NodeState,
  log: Logger,
  opts: { controlPlaneServices?: boolean } = {},
): Promise<void> {
  const services = state.role === 'control-plane' && opts.controlPlaneServices !== false
  const units = [KUBELET_UNIT, ...(services ? CONTROL_PLANE_UNITS : [])]
  try {
    await runner.run('systemctl', ['start', ...units], { timeoutMs: SYSTEMCTL_TIMEOUT_MS })
  } catch (cause) {
    throw new CliError('this node rejoined its cluster after a reboot, but starting its services failed', {
      cause,
      hint: `systemctl status ${units.join(' ')} says why`,
    })
  }
  log.info('This node was bootstrapped in an earlier boot; started its services', { role: state.role, units })
}
