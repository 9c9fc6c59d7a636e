/**
 * Durations given on the command line, in one grammar everywhere: Go's (`300ms`, `1.5h`, `1h30m`,
 * `2m3.5s`; units ns, us/µs, ms, s, m, h) plus `d` for days, as Constellation's CLI and Helm take them.
 */
import { UsageError } from '../errors/index.js'

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu, both accepted by Go
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
}

/** The longest a Node.js timer can wait (2^31-1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1

const TERM = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d)/y
const EXAMPLES = 'like 90s, 5m, 1h30m, 1.5h or 7d'

/** Milliseconds (whole, at least 1); `flag` names the source in the error (a usage error, exit 2). */
export function parseDuration(text: string, flag: string): number {
  const input = text.trim()
  let ms = 0
  TERM.lastIndex = 0
  while (TERM.lastIndex < input.length) {
    const m = TERM.exec(input)
    if (!m) throw new UsageError(`${flag} ${JSON.stringify(text)} is not a duration ${EXAMPLES}`)
    ms += Number(m[1]) * (UNIT_MS[m[2] as string] as number)
  }
  if (input === '' || !(ms > 0)) {
    throw new UsageError(`${flag} ${JSON.stringify(text)} is not a duration above zero, ${EXAMPLES}`)
  }
  if (ms > MAX_DURATION_MS) {
    throw new UsageError(
      `${flag} ${JSON.stringify(text)} is too long: the maximum is ${formatDuration(MAX_DURATION_MS)} (about 24.8 days)`,
    )
  }
  return Math.ceil(ms)
}

/** Go-style text for milliseconds: 596h31m23.647s. */
export function formatDuration(ms: number): string {
  const h = Math.floor(ms / 3_600_000)
  const m = Math.floor((ms % 3_600_000) / 60_000)
  const s = (ms % 60_000) / 1000
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`
}
