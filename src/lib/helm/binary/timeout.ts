/**
 * `--helm-timeout`: the CLI's one duration grammar (lib/system parseDuration), checked before
 * anything runs. It travels as milliseconds; helm-args.ts alone writes it as Helm's Go text.
 */
import { parseDuration } from '../../system/index.js'

const FLAG = '--helm-timeout'

/** Constellation's helm timeout, for init's bring-up and upgrades alike (the flags' default). */
export const DEFAULT_HELM_TIMEOUT = '10m'

/** Milliseconds of a `--helm-timeout`; a bad one is a usage error naming the flag. */
export function parseHelmTimeout(text: string): number {
  return parseDuration(text, FLAG)
}

export const DEFAULT_HELM_TIMEOUT_MS = parseHelmTimeout(DEFAULT_HELM_TIMEOUT)
