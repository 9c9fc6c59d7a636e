/** `--helm-timeout`: a Go duration as Helm takes it (10m, 90s, 1h30m), checked before anything runs. */
import { UsageError } from '../errors/index.js'

const GO_DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/

/** Milliseconds of a duration in that grammar; undefined when it is not one or not positive. */
function durationMs(text: string): number | undefined {
  const m = GO_DURATION.exec(text.trim())
  const ms = m ? (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000 : 0
  return ms > 0 ? ms : undefined
}

/** Returns the duration unchanged when valid and positive; Helm parses it again itself. */
export function parseHelmTimeout(text: string): string {
  if (durationMs(text) === undefined) {
    throw new UsageError(
      `--helm-timeout ${JSON.stringify(text)} is not a duration like 10m, 90s or 1h30m`,
      'give hours (h), minutes (m) and seconds (s), greater than zero',
    )
  }
  return text.trim()
}

/** Milliseconds of a timeout that parseHelmTimeout accepted. */
export function helmTimeoutMs(text: string): number {
  const ms = durationMs(text)
  if (ms === undefined) throw new Error(`helm timeout ${JSON.stringify(text)} was not checked`)
  return ms
}
