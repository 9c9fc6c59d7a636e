/** The upgrade plan: each release's installed and target version, and the verdict of the rules. */
import { CliError } from '../errors/index.js'
import type { InstalledRelease } from '../helm/index.js'
import type { ReleaseTarget } from '../helm/index.js'
import { judgeUpgrade, type Verdict } from './rules.js'
import type { ValueChanges } from '../helm/index.js'

export interface PlannedRelease {
  /** Its namespace is where the release is installed, whatever the pins or the config say. */
  target: ReleaseTarget
  /** Chart version deployed now; undefined when the release does not exist. */
  installed?: string
  /** Its revision: what an explicit rollback goes back to. */
  installedRevision?: number
  verdict: Verdict
  /** What the upgrade does to the values set on the release (prepare.ts fills it in). */
  valueChanges?: ValueChanges
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
  const releases = targets.map((pinned): PlannedRelease => {
    // A release is found by name wherever it was installed; two of one name are two clusters' worth.
    const found = installed.filter((r) => r.name === pinned.name)
    if (found.length > 1) {
      const where = found.map((r) => r.namespace).join(' and ')
      throw new CliError(`release ${pinned.name} is installed twice, in namespaces ${where}`, {
        hint: `uninstall the one the cluster does not use (\`helm uninstall ${pinned.name} -n <namespace>\`), then plan again`,
      })
    }
    const current = found[0]
    const target = current ? { ...pinned, namespace: current.namespace } : pinned
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
    return { target, installed: current?.version, installedRevision: current?.revision, verdict }
  })
  return { releases, force: opts.force }
}

/** Whether the plan changes anything in the cluster. */
export const planChangesCluster = (plan: UpgradePlan): boolean =>
  plan.releases.some((r) => r.verdict.action !== 'skip')
