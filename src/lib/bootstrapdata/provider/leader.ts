/**
 * Leader election over a coordination.k8s.io Lease, as controller-runtime does it: one replica
 * reconciles, the others wait for the Lease to expire. The holder renews it; a holder that cannot
 * renew within the lease duration has lost it and must stop reconciling at once.
 */
import { KubeApiError, type KubeApi } from '../../kube/index.js'

export interface LeaderElectionOptions {
  api: Pick<KubeApi, 'getLease' | 'createLease' | 'replaceLease'>
  namespace: string
  name: string
  identity: string
  durationMs: number
  clock: () => Date
}

export class LeaderLease {
  constructor(private readonly opts: LeaderElectionOptions) {}

  /** Takes the Lease if it is free, expired, or ours; false when another holder's is live. */
  async tryAcquire(): Promise<boolean> {
    const { api, namespace, name, identity, durationMs, clock } = this.opts
    const now = clock()
    const spec = { holder: identity, renewed: now, durationSeconds: Math.ceil(durationMs / 1000) }
    try {
      const lease = await api.getLease(namespace, name)
      if (!lease) {
        await api.createLease(namespace, name, spec)
        return true
      }
      const expires = (lease.renewed?.getTime() ?? 0) + (lease.durationSeconds ?? 0) * 1000
      const free = !lease.holder || lease.holder === identity || expires <= now.getTime()
      if (!free) return false
      await api.replaceLease(namespace, name, spec, lease.resourceVersion)
      return true
    } catch (err) {
      // Another replica wrote it between our read and write: it won this round.
      if (err instanceof KubeApiError && err.status === 409) return false
      throw err
    }
  }

  /** Gives the Lease up on a graceful stop, so a standby takes over without waiting for expiry. */
  async release(): Promise<void> {
    const { api, namespace, name, identity, clock } = this.opts
    const lease = await api.getLease(namespace, name)
    if (lease?.holder !== identity) return
    await api.replaceLease(
      namespace,
      name,
      { holder: '', renewed: clock(), durationSeconds: 1 },
      lease.resourceVersion,
    )
  }
}
