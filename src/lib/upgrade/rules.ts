/** The upgrade rules: no downgrade, no same version, at most one minor step; `force` skips them. */

export interface Semver {
  major: number
  minor: number
  patch: number
  prerelease: string
}

const SEMVER = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/

export function parseSemver(text: string): Semver | undefined {
  const m = SEMVER.exec(text.trim())
  if (!m) return undefined
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), prerelease: m[4] ?? '' }
}

/** Semver precedence; a prerelease sorts before its release (prerelease tags compared as text). */
export function compareSemver(a: Semver, b: Semver): number {
  const d = a.major - b.major || a.minor - b.minor || a.patch - b.patch
  if (d !== 0) return d
  if (a.prerelease === b.prerelease) return 0
  if (!a.prerelease) return 1
  if (!b.prerelease) return -1
  return a.prerelease < b.prerelease ? -1 : 1
}

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
