/**
 * Which recovery requests a waiting node takes on. Its caller is not authenticated and each try
 * costs a key derivation on the disk (argon2id: about a second), so the queue is small, an address
 * has one request waiting at most, and an address whose master secret was wrong waits before its
 * next one is taken, doubling each time. A refusal never touches another address's request.
 */

export interface RecoveryLimits {
  /** Requests waiting or being tried, all addresses together. */
  queued?: number
  /** Requests waiting or being tried from one address. */
  queuedPerPeer?: number
  /** After a wrong master secret an address waits this long, doubling with each one up to backoffMaxMs. */
  backoffInitialMs?: number
  backoffMaxMs?: number
  /** Addresses whose wrong secrets are remembered; beyond, the one quiet longest is forgotten. */
  trackedPeers?: number
}

/**
 * The operator's `recover` sends one request at a time: eight in the queue leaves it room beside
 * seven others, and bounds a burst to a few seconds of tries. The backoff caps at a minute, so an
 * operator who sent a wrong secret from the same address is not locked out for long.
 */
export const DEFAULT_RECOVERY_LIMITS: Required<RecoveryLimits> = {
  queued: 8,
  queuedPerPeer: 1,
  backoffInitialMs: 1_000,
  backoffMaxMs: 60_000,
  trackedPeers: 4_096,
}

/** When a refused caller may usefully ask again, if nothing about the queue is known: about one try. */
const BUSY_RETRY_MS = 1_000

export type RefusalReason = 'busy' | 'peer' | 'backoff'

export type AdmissionVerdict =
  { admitted: true } | { admitted: false; reason: RefusalReason; retryAfterMs: number }

interface Backoff {
  failures: number
  /** Not before this time (ms) is the address's next request taken. */
  until: number
}

export class RecoveryAdmission {
  private readonly limits: Required<RecoveryLimits>
  private readonly waiting = new Map<string, number>()
  private waitingTotal = 0
  /** Least recently failed first, so the front is the one to forget. */
  private readonly backoffs = new Map<string, Backoff>()

  constructor(
    limits: RecoveryLimits = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_RECOVERY_LIMITS, ...limits }
  }

  /** Takes a request from `peer` into the queue, or says why not and when to ask again. */
  admit(peer: string): AdmissionVerdict {
    const backoff = this.backoffs.get(peer)
    const wait = backoff ? backoff.until - this.now() : 0
    if (wait > 0) return { admitted: false, reason: 'backoff', retryAfterMs: wait }
    if ((this.waiting.get(peer) ?? 0) >= this.limits.queuedPerPeer)
      return { admitted: false, reason: 'peer', retryAfterMs: BUSY_RETRY_MS }
    if (this.waitingTotal >= this.limits.queued)
      return { admitted: false, reason: 'busy', retryAfterMs: BUSY_RETRY_MS }
    this.waiting.set(peer, (this.waiting.get(peer) ?? 0) + 1)
    this.waitingTotal++
    return { admitted: true }
  }

  /** A request left the queue: answered or dropped. */
  leave(peer: string): void {
    const left = (this.waiting.get(peer) ?? 1) - 1
    if (left > 0) this.waiting.set(peer, left)
    else this.waiting.delete(peer)
    this.waitingTotal = Math.max(0, this.waitingTotal - 1)
  }

  /** A request left the queue after its master secret was wrong: the address then waits. */
  leaveWrongSecret(peer: string): void {
    this.leave(peer)
    this.backOff(peer)
  }

  private backOff(peer: string): void {
    const failures = (this.backoffs.get(peer)?.failures ?? 0) + 1
    const delay = Math.min(this.limits.backoffInitialMs * 2 ** (failures - 1), this.limits.backoffMaxMs)
    this.backoffs.delete(peer) // re-inserted at the back: the most recently failed
    this.backoffs.set(peer, { failures, until: this.now() + delay })
    for (const [quietest] of this.backoffs) {
      if (this.backoffs.size <= this.limits.trackedPeers) break
      this.backoffs.delete(quietest)
    }
  }
}
