/**
 * `status --watch`: the status read again every interval until the signal (the CLI: Ctrl-C), as
 * `watch` and `kubectl get -w` do. Where each frame goes is the caller's: a terminal redraws it in
 * place every round (its clock moves), anything else gets a frame only when the status changed.
 */
import { chainMessage } from '../errors/index.js'
import { sleepMs } from '../system/index.js'

export interface WatchFrame {
  text: string
  /** When the status was read. */
  at: Date
}

export interface WatchOptions {
  /** One round's status, as text (the table, or JSON). */
  read: () => Promise<string>
  intervalMs: number
  /** Show a frame only when its text differs from the last one's (not a terminal). */
  onlyChanges: boolean
  show: (frame: WatchFrame) => void
  signal?: AbortSignal
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  now?: () => Date
}

export async function watchStatus(o: WatchOptions): Promise<void> {
  const sleep = o.sleep ?? sleepMs
  const now = o.now ?? (() => new Date())
  let last: string | undefined
  while (!o.signal?.aborted) {
    // a round that fails (the workspace moved, a file half written) is shown; the watch goes on
    const text = await o.read().catch((err: unknown) => `status failed: ${chainMessage(err)}`)
    if (!o.onlyChanges || text !== last) o.show({ text, at: now() })
    last = text
    if (o.signal?.aborted) break
    await sleep(o.intervalMs, o.signal).catch(() => {})
  }
}
