/** Durations given on the command line: `500ms`, `90s`, `5m`, `24h`, `7d`. */
import { UsageError } from '../errors/index.js'

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** Milliseconds; `flag` names the source in the error (a usage error, exit 2). */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text)
  if (!m) throw new UsageError(`${flag} ${JSON.stringify(text)} is not a duration like 90s, 5m, 24h or 7d`)
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]
}
