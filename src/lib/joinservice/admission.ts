/**
 * Who may be issued a ticket now. Control-plane joins run one at a time (etcd admits one learner at
 * a time), worker joins with bounded concurrency; either way a join waits its turn in arrival order
 * and is never failed for being concurrent. Process-wide: one join service's queue.
 */
import type { NodeRole } from '../nodeconfig/index.js'

export const DEFAULT_WORKER_JOIN_CONCURRENCY = 32

export interface AdmissionLimits {
  /** Worker joins handled at once; more wait. */
  workerConcurrency?: number
}

export interface QueueStats {
  active: number
  queued: number
}

/** A counting semaphore whose waiters start in arrival order; an aborted waiter leaves the queue. */
class FifoSemaphore {
  private active = 0
  private readonly queue: Array<() => void> = []

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`concurrency ${limit}: want an integer ≥ 1`)
  }

  async run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal)
    try {
      return await work()
    } finally {
      this.release()
    }
  }

  stats(): QueueStats {
    return { active: this.active, queued: this.queue.length }
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted()
    if (this.active < this.limit) {
      this.active++
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const start = () => {
        signal?.removeEventListener('abort', leave)
        this.active++
        resolve()
      }
      const leave = () => {
        const at = this.queue.indexOf(start)
        if (at >= 0) this.queue.splice(at, 1)
        reject(signal?.reason)
      }
      this.queue.push(start)
      signal?.addEventListener('abort', leave, { once: true })
    })
  }

  private release(): void {
    this.active--
    this.queue.shift()?.()
  }
}

export class Admission {
  private readonly controlPlanes = new FifoSemaphore(1)
  private readonly workers: FifoSemaphore

  constructor(limits: AdmissionLimits = {}) {
    this.workers = new FifoSemaphore(limits.workerConcurrency ?? DEFAULT_WORKER_JOIN_CONCURRENCY)
  }

  /** Runs `work` when the role's turn comes; `signal` (the caller hung up) takes it out of the queue. */
  run<T>(role: NodeRole, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return (role === 'control-plane' ? this.controlPlanes : this.workers).run(work, signal)
  }

  stats(): Record<NodeRole, QueueStats> {
    return { 'control-plane': this.controlPlanes.stats(), worker: this.workers.stats() }
  }
}
