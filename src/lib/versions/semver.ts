/** Chart versions: semver as Helm reads it (an optional `v`, prerelease and build metadata). */

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
