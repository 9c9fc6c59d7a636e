/** The upgrade rules: no downgrade, no same version, at most one minor step; `force` skips them. */
import { compareSemver, parseSemver } from '../versions/index.js'

export type Verdict =
  | { action: 'install'; reason: string }
  | { action: 'upgrade'; reason: string }
  | { action: 'skip'; reason: string }

export interface RuleOptions {
  force: boolean
  /** Named exception: this release may skip minor versions (its upstream supports that). */
  allowMinorJump: boolean
}

/** The verdict for moving a release from `installed` (undefined: not installed) to `target`. */
export function judgeUpgrade(installed: string | undefined, target: string, opts: RuleOptions): Verdict {
  if (installed === undefined) return { action: 'install', reason: 'not installed' }
  const from = parseSemver(installed)
  const to = parseSemver(target)
  if (opts.force) return { action: 'upgrade', reason: 'forced: version rules skipped' }
  if (!from) return { action: 'skip', reason: `installed version ${installed} is not semver` }
  if (!to) return { action: 'skip', reason: `target version ${target} is not semver` }
  const order = compareSemver(to, from)
  if (order === 0) return { action: 'skip', reason: `already at ${installed}` }
  if (order < 0) return { action: 'skip', reason: `${target} would downgrade ${installed}` }
  if (to.major !== from.major) {
    return { action: 'skip', reason: `${installed} → ${target} changes the major version (use --force)` }
  }
  if (to.minor - from.minor > 1 && !opts.allowMinorJump) {
    return {
      action: 'skip',
      reason: `${installed} → ${target} skips ${to.minor - from.minor - 1} minor version(s); upgrade one minor at a time (or --force)`,
    }
  }
  return { action: 'upgrade', reason: `${installed} → ${target}` }
}
