/** `--helm-timeout`: a Go duration as Helm takes it (10m, 90s, 1h30m), checked before anything runs. */
import { UsageError } from '../errors/index.js'

const GO_DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/

/** Returns the duration unchanged when valid and positive; Helm parses it again itself. */
export function parseHelmTimeout(text: string): string {
  const m = GO_DURATION.exec(text.trim())
  const seconds = m ? Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0) : 0
  if (!m || seconds <= 0) {
    throw new UsageError(
      `--helm-timeout ${JSON.stringify(text)} is not a duration like 10m, 90s or 1h30m`,
      'give hours (h), minutes (m) and seconds (s), greater than zero',
    )
  }
  return text.trim()
}
