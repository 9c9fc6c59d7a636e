/**
 * Control-plane joins one at a time across the whole cluster (etcd admits one learner at a time),
 * however many join services there are. A Lease in kube-system names the control plane whose turn
 * it is; its turn ends when its Node registered (it joined), when the join service gives it back
 * (its ticket failed, or the node hung up before it had it), or when the Lease expires (the node
 * took its ticket and did not register within about a minute). Another control plane waits
 * meanwhile: queued, never refused for concurrency. Only control planes the metadata lists get
 * this far (the join service decides the role), so no other caller can hold the turn.
 */
import { KubeApiError, type KubeApi, type Lease } from '../kube/index.js'
import { sleepMs, type Logger } from '../system/index.js'

export const CONTROL_PLANE_LEASE = {
  namespace: 'kube-system',
  name: 'constellation-control-plane-join',
} as const
/**
 * A joining control plane's kubelet registers its Node early in `kubeadm join` (kubelet-start),
 * which ends the turn; one that has not within this has failed or vanished.
 */
export const CONTROL_PLANE_TURN_SECONDS = 60
/** Two reads of the API per look: the next control plane starts within a quarter second of its turn. */
const POLL_INTERVAL_MS = 250

/** Takes a turn for a control plane before its ticket is issued. */
export interface ControlPlaneTurns {
  /** Resolves once it is `node`'s turn; rejects when `signal` aborts (the node hung up). */
  take(node: string, signal: AbortSignal): Promise<ControlPlaneTurn>
}

export interface ControlPlaneTurn {
  /** Gives the turn back at once (the node will not join with it); never rejects. */
  release(): Promise<void>
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
  /** Empties the Lease if `node` still holds it; a Lease someone else took meanwhile is theirs. */
  const release = async (node: string): Promise<void> => {
    try {
      const lease = await api.getLease(namespace, name)
      if (lease?.holder !== node) return
      const spec = { holder: '', renewed: clock(), durationSeconds }
      await api.replaceLease(namespace, name, spec, lease.resourceVersion)
      logger.info('Control-plane join turn given back', { node })
    } catch (err) {
      logger.warn('Giving back the control-plane join turn failed; it expires on its own', {
        node,
        error: err instanceof Error ? err.message : String(err),
      })
    }
  }
  return {
    async take(node, signal) {
      let waitingFor: string | undefined
      for (;;) {
        signal.throwIfAborted()
        const { taken, holder } = await tryTake(node)
        if (taken) return { release: () => release(node) }
        if (holder && holder !== waitingFor)
          logger.info('Control-plane join queued behind another', { node, joining: holder })
        waitingFor = holder
        await sleepMs(opts.pollIntervalMs ?? POLL_INTERVAL_MS, signal)
      }
    },
  }
}
