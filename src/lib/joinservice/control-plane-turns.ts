/**
 * Control-plane joins one at a time across the whole cluster (etcd admits one learner at a time),
 * however many join services there are. A Lease in kube-system names the control plane whose turn
 * it is; its turn ends when its Node registered (it joined) or when the Lease expires (it failed or
 * vanished). Another control plane waits meanwhile: queued, never refused for concurrency.
 */
import { KubeApiError, type KubeApi, type Lease } from '../kube/index.js'
import { sleepMs, type Logger } from '../system/index.js'

export const CONTROL_PLANE_LEASE = {
  namespace: 'kube-system',
  name: 'constellation-control-plane-join',
} as const
/** The JoinClient gives kubeadm join 5 minutes; a turn unused for longer has been given up. */
export const CONTROL_PLANE_TURN_SECONDS = 5 * 60
const POLL_INTERVAL_MS = 1_000

/** Takes a turn for a control plane before its ticket is issued. */
export interface ControlPlaneTurns {
  /** Resolves once it is `node`'s turn; rejects when `signal` aborts (the node hung up). */
  take(node: string, signal: AbortSignal): Promise<void>
}

export interface LeaseTurnsOptions {
  api: Pick<KubeApi, 'getLease' | 'createLease' | 'replaceLease' | 'hasNode'>
  clock: () => Date
  logger: Logger
  turnSeconds?: number
  pollIntervalMs?: number
}

export function leaseControlPlaneTurns(opts: LeaseTurnsOptions): ControlPlaneTurns {
  const { api, clock, logger } = opts
  const { namespace, name } = CONTROL_PLANE_LEASE
  const durationSeconds = opts.turnSeconds ?? CONTROL_PLANE_TURN_SECONDS
  /** Whether the holder's turn is over, so that another may take the Lease. */
  const over = async (lease: Lease, node: string): Promise<boolean> => {
    if (!lease.holder || lease.holder === node) return true
    const renewed = lease.renewed?.getTime() ?? 0
    if (renewed + (lease.durationSeconds ?? durationSeconds) * 1000 <= clock().getTime()) return true
    return api.hasNode(lease.holder)
  }
  const tryTake = async (node: string): Promise<{ taken: boolean; holder?: string }> => {
    const spec = { holder: node, renewed: clock(), durationSeconds }
    const lease = await api.getLease(namespace, name)
    try {
      if (!lease) await api.createLease(namespace, name, spec)
      else if (await over(lease, node)) await api.replaceLease(namespace, name, spec, lease.resourceVersion)
      else return { taken: false, holder: lease.holder }
      return { taken: true }
    } catch (err) {
      // another join service took it between our read and write: look again
      if (err instanceof KubeApiError && err.status === 409) return { taken: false }
      throw err
    }
  }
  return {
    async take(node, signal) {
      let waitingFor: string | undefined
      for (;;) {
        signal.throwIfAborted()
        const { taken, holder } = await tryTake(node)
        if (taken) return
        if (holder && holder !== waitingFor)
          logger.info('Control-plane join queued behind another', { node, joining: holder })
        waitingFor = holder
        await sleepMs(opts.pollIntervalMs ?? POLL_INTERVAL_MS, signal)
      }
    },
  }
}
