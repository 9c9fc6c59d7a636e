/**
 * `--helm-timeout`: the CLI's one duration grammar (lib/system parseDuration), checked before
 * anything runs, and handed to Helm in Go's own form (Helm rejects `d` and other extensions).
 */
import { formatDuration, parseDuration } from '../../system/index.js'

const FLAG = '--helm-timeout'

/** The timeout as Helm's `--timeout` takes it: `10m` → `10m0s`, `1d` → `24h0m0s`. */
export function parseHelmTimeout(text: string): string {
  return formatDuration(parseDuration(text, FLAG))
}

/** Milliseconds of a timeout (as given, or as parseHelmTimeout returned it). */
export function helmTimeoutMs(text: string): number {
  return parseDuration(text, FLAG)
}
