/** The upgrade plan: each release's installed and target version, and the verdict of the rules. */
import { CliError } from '../errors/index.js'
import type { InstalledRelease } from './helm.js'
import type { ReleaseTarget } from './releases.js'
import { judgeUpgrade, type Verdict } from './rules.js'

export interface PlannedRelease {
  target: ReleaseTarget
  /** Chart version deployed now; undefined when the release does not exist. */
  installed?: string
  verdict: Verdict
}

export interface UpgradePlan {
  releases: PlannedRelease[]
  force: boolean
}

/** Helm states in which another operation owns the release; touching it would fight that one. */
const BUSY_STATES = ['pending-install', 'pending-upgrade', 'pending-rollback', 'uninstalling']

export function planUpgrade(
  targets: readonly ReleaseTarget[],
  installed: readonly InstalledRelease[],
  opts: { force: boolean },
): UpgradePlan {
  const releases = targets.map((target): PlannedRelease => {
    const found = installed.filter((r) => r.name === target.name)
    const same = found.filter((r) => r.namespace === target.namespace)
    if (found.length > 0 && same.length === 0) {
      const where = found.map((r) => r.namespace).join(', ')
      throw new CliError(
        `release ${target.name} is installed in namespace ${where}, but the plan expects ${target.namespace}`,
        { hint: `set upgrade.charts[].namespace for ${target.name} to the namespace it runs in` },
      )
    }
    const current = same[0]
    if (current && BUSY_STATES.includes(current.status)) {
      return {
        target,
        installed: current.version,
        verdict: { action: 'skip', reason: `release is ${current.status}: another Helm operation owns it` },
      }
    }
    const verdict = judgeUpgrade(current?.version, target.version, {
      force: opts.force,
      allowMinorJump: target.allowMinorJump,
    })
    return { target, installed: current?.version, verdict }
  })
  return { releases, force: opts.force }
}

/** Whether the plan changes anything in the cluster. */
export const planChangesCluster = (plan: UpgradePlan): boolean =>
  plan.releases.some((r) => r.verdict.action !== 'skip')
