/** The one retry helper: exponential backoff with optional jitter, a predicate that decides what is transient, abortable. */
import { chainMessage } from '../errors/index.js'
import { formatDuration } from './duration.js'

export interface RetryOptions {
  /** Total attempts including the first; Infinity retries until success, a refusal or the signal. */
  attempts: number
  initialDelayMs: number
  maxDelayMs?: number
  /**
   * Spreads each delay uniformly over ±jitter of itself (0.2: 80–120 %), so that many clients that
   * failed together do not retry together. Default 0.
   */
  jitter?: number
  /** [0, 1), for the jitter; Math.random unless a test fixes it. */
  random?: () => number
  /** Returns true when the error is worth another attempt. */
  retryable: (err: unknown) => boolean
  /**
   * Returns true for a failure that does not lengthen the wait: the next attempt comes after
   * steadyDelayMs (e.g. nothing listens yet: a refused connection costs the other side nothing),
   * and a later failure of another kind backs off from initialDelayMs again.
   */
  steady?: (err: unknown) => boolean
  /** The wait after a steady failure; initialDelayMs unless given. */
  steadyDelayMs?: number
  signal?: AbortSignal
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void
}

export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  const sleep = opts.sleep ?? sleepMs
  let delay = opts.initialDelayMs
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt)
    } catch (err) {
      if (attempt >= opts.attempts || !opts.retryable(err) || opts.signal?.aborted) throw err
      const steady = opts.steady?.(err) ?? false
      if (steady) delay = opts.initialDelayMs
      const base = steady ? (opts.steadyDelayMs ?? delay) : delay
      const wait = withJitter(base, opts.jitter ?? 0, opts.random ?? Math.random)
      opts.onRetry?.(err, attempt, wait)
      await sleep(wait, opts.signal)
      if (!steady) delay = Math.min(delay * 2, opts.maxDelayMs ?? Number.POSITIVE_INFINITY)
    }
  }
}

/** How much of the failure a retry line quotes: helm and gRPC errors can run to pages. */
const RETRY_REASON_CHARS = 300

/**
 * How a retry is told to the person waiting, in one line, from `onRetry`'s arguments: "attempt 2 of
 * 5 failed: <why>; trying again in 4s" (without "of N" when the attempts are unbounded).
 */
export function describeRetry(err: unknown, attempt: number, attempts: number, delayMs: number): string {
  const of = Number.isFinite(attempts) ? ` of ${attempts}` : ''
  const why = chainMessage(err).replace(/\s*\n\s*/g, ' ')
  const short = why.length > RETRY_REASON_CHARS ? `${why.slice(0, RETRY_REASON_CHARS - 1)}…` : why
  return `attempt ${attempt}${of} failed: ${short}; trying again in ${formatDuration(delayMs)}`
}

function withJitter(delayMs: number, jitter: number, random: () => number): number {
  return jitter === 0 ? delayMs : Math.round(delayMs * (1 + jitter * (2 * random() - 1)))
}

export function sleepMs(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** True when `work` settled within `ms`; the timer never keeps the process alive. */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  try {
    return await Promise.race([work.then(() => true), timeout])
  } finally {
    clearTimeout(timer)
  }
}
