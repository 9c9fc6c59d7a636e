/** The one retry helper: exponential backoff, a predicate that decides what is transient, abortable. */
export interface RetryOptions {
  /** Total attempts including the first. */
  attempts: number
  initialDelayMs: number
  maxDelayMs?: number
  /** Returns true when the error is worth another attempt. */
  retryable: (err: unknown) => boolean
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
      opts.onRetry?.(err, attempt, delay)
      await sleep(delay, opts.signal)
      delay = Math.min(delay * 2, opts.maxDelayMs ?? Number.POSITIVE_INFINITY)
    }
  }
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
