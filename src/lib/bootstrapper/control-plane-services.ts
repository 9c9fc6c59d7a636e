/**
 * A node that became a control plane (init succeeded, or it joined as one) starts the key service
 * and the join service, so that it can serve joins. systemd runs them (templates/systemd), restarts
 * them on failure and starts them on later boots, once the master secret is on the node.
 */
import { CliError } from '../errors/index.js'
import type { Logger, Runner } from '../system/index.js'

export const CONTROL_PLANE_UNITS = [
  'constellation-keyservice.service',
  'constellation-joinservice.service',
] as const
/** systemctl returns once the units were started (Type=simple); anything longer is a stuck manager. */
export const SYSTEMCTL_TIMEOUT_MS = 60_000

export async function startControlPlaneServices(runner: Runner, log: Logger): Promise<void> {
  try {
    await runner.run('systemctl', ['start', ...CONTROL_PLANE_UNITS], { timeoutMs: SYSTEMCTL_TIMEOUT_MS })
  } catch (cause) {
    throw new CliError(
      'this node is a control plane of the cluster, but starting its key and join services failed; it cannot serve joins',
      {
        cause,
        hint: `systemctl status ${CONTROL_PLANE_UNITS.join(' ')} says why; start them once fixed`,
      },
    )
  }
  log.info('Started the key and join services', { units: CONTROL_PLANE_UNITS })
}
