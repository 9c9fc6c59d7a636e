/**
 * `bootstrap-data controller`: a Cluster API bootstrap provider. While it holds the leader Lease it
 * reconciles every KubeadmConfig whenever a KubeadmConfig, Machine or Cluster changes (watches), and
 * at least every resync period (waiting machines, token refresh). A lost Lease ends it with an
 * error, as controller-runtime does; a graceful stop finishes the pass in flight and releases the
 * Lease so a standby takes over at once.
 */
import type { Logger } from '../../system/index.js'
import type { ResourceRef } from './capi-api.js'
import type { LeaderLease } from './leader.js'
import { reconcileConfig } from './reconcile.js'
import type { Outcome, ReconcileDeps } from './types.js'

export interface ControllerOptions {
  resyncMs: number
  /** How often the leader renews the Lease (and a standby retries to take it). */
  renewMs: number
  leaseDurationMs: number
  /** Before a broken watch is opened again. */
  rewatchMs?: number
}

export class BootstrapController {
  private stopping = false
  private leading = false
  private wake?: () => void
  private kicked = false
  private watches: Array<() => void> = []
  private readonly finished: Promise<void>
  private finish!: (err?: Error) => void
  private loop?: Promise<void>
  /** Set by the renewal loop when the Lease could not be renewed within its duration. */
  private lost?: Error
  private wakeRenewal?: () => void
  /** Last outcome per config, so the log says what changed and not every pass. */
  private readonly outcomes = new Map<string, string>()

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly lease: LeaderLease,
    private readonly log: Logger,
    private readonly opts: ControllerOptions,
  ) {
    this.finished = new Promise<void>((resolve, reject) => {
      this.finish = (err) => (err ? reject(err) : resolve())
    })
    this.finished.catch(() => undefined)
  }

  get done(): Promise<void> {
    return this.finished
  }

  /** Starts campaigning for the Lease; resolves at once (standbys wait in the background). */
  start(): Promise<void> {
    this.loop = this.run().then(
      () => this.finish(),
      (err: unknown) => this.finish(err instanceof Error ? err : new Error(String(err))),
    )
    return Promise.resolve()
  }

  async stop(): Promise<void> {
    if (this.stopping) return this.loop
    this.stopping = true
    this.wake?.()
    this.wakeRenewal?.()
    await this.loop
  }

  private async run(): Promise<void> {
    while (!this.stopping && !(await this.lease.tryAcquire())) await this.sleep(this.opts.renewMs)
    if (this.stopping) return
    this.leading = true
    this.log.info('leading: reconciling KubeadmConfigs')
    // Renewal runs beside the passes: a long pass (CA generation) must not let the Lease lapse.
    const renewing = this.keepRenewing()
    try {
      for (const r of [
        this.deps.resources.kubeadmConfigs,
        this.deps.resources.machines,
        this.deps.resources.clusters,
      ])
        await this.watch(r)
      let nextPass = 0
      while (!this.stopping && !this.lost) {
        if (this.kicked || Date.now() >= nextPass) {
          this.kicked = false
          await this.pass()
          nextPass = Date.now() + this.opts.resyncMs
        }
        if (!this.stopping && !this.lost) await this.sleep(Math.max(0, nextPass - Date.now()))
      }
    } finally {
      for (const stop of this.watches) stop()
      this.watches = []
      const lost = this.lost
      this.leading = false
      this.wakeRenewal?.()
      await renewing
      if (!lost)
        await this.lease
          .release()
          .catch((err: unknown) =>
            this.log.warn('could not release the leader Lease', { error: String(err) }),
          )
    }
    if (this.lost) throw this.lost
  }

  /** Renews every renewMs while leading; a Lease not renewed within its duration is lost. */
  private async keepRenewing(): Promise<void> {
    let renewedAt = Date.now()
    while (this.leading && !this.stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.opts.renewMs)
        this.wakeRenewal = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      if (!this.leading || this.stopping) return
      if (await this.renew()) renewedAt = Date.now()
      else if (Date.now() - renewedAt >= this.opts.leaseDurationMs) {
        this.lost = new Error('lost the leader Lease: it could not be renewed within its duration')
        this.log.error(this.lost.message)
        this.wake?.()
        return
      }
    }
  }

  /** Renewing is taking it again while ours; false when the API failed or another holds it. */
  private async renew(): Promise<boolean> {
    try {
      return await this.lease.tryAcquire()
    } catch (err) {
      this.log.warn('renewing the leader Lease failed', { error: String(err) })
      return false
    }
  }

  private async pass(): Promise<void> {
    let configs
    try {
      configs = await this.deps.api.list(this.deps.resources.kubeadmConfigs)
    } catch (err) {
      this.log.warn('listing KubeadmConfigs failed', { error: String(err) })
      return
    }
    const deps = passCache(this.deps)
    for (const config of configs) {
      if (this.stopping) return
      const key = `${config.metadata.namespace ?? 'default'}/${config.metadata.name}`
      let outcome: Outcome
      try {
        outcome = await reconcileConfig(config, deps)
      } catch (err) {
        outcome = { result: 'failed', reason: String(err instanceof Error ? err.message : err) }
      }
      const summary = JSON.stringify(outcome)
      if (this.outcomes.get(key) === summary || outcome.result === 'unchanged') continue
      this.outcomes.set(key, summary)
      const level = outcome.result === 'failed' ? 'warn' : 'info'
      this.log[level](`KubeadmConfig ${key}: ${outcome.result}`, { ...outcome })
    }
  }

  private async watch(resource: ResourceRef): Promise<void> {
    const onEvent = () => this.kick()
    const onEnd = () => {
      if (this.stopping) return
      setTimeout(() => {
        if (!this.stopping && this.leading) void this.watch(resource).catch(() => onEnd())
      }, this.opts.rewatchMs ?? 1000).unref()
      this.kick()
    }
    try {
      this.watches.push(await this.deps.api.watch(resource, onEvent, onEnd))
    } catch (err) {
      this.log.warn(`watching ${resource.plural} failed; retrying`, { error: String(err) })
      onEnd()
    }
  }

  private kick(): void {
    this.kicked = true
    this.wake?.()
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.wake = done
    })
  }
}

/**
 * Within one pass every config of a Cluster shares its workload client and CA set: opening a
 * client and reading four Secrets per machine dominated a pass. The next pass reads them afresh.
 */
function passCache(deps: ReconcileDeps): ReconcileDeps {
  const workloads = new Map<string, ReturnType<ReconcileDeps['workload']>>()
  const authorities = new Map<string, ReturnType<ReconcileDeps['authorities']>>()
  const remembered = <T>(cache: Map<string, Promise<T>>, key: string, make: () => Promise<T>) => {
    let value = cache.get(key)
    if (!value) {
      value = make()
      value.catch(() => cache.delete(key))
      cache.set(key, value)
    }
    return value
  }
  return {
    ...deps,
    workload: (text, cluster) => remembered(workloads, text, () => deps.workload(text, cluster)),
    authorities: (cluster, generate) =>
      remembered(
        authorities,
        `${cluster.metadata.namespace ?? 'default'}/${cluster.metadata.name}/${generate}`,
        () => deps.authorities(cluster, generate),
      ),
  }
}
