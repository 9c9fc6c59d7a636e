/** Plain-text rendering of the plan and of the upgrade report. */
import { renderTable } from '../ui/index.js'
import type { UpgradeReport } from './execute.js'
import type { UpgradePlan } from './plan.js'

export function renderPlan(plan: UpgradePlan): string {
  const rows = plan.releases.map((r) => [
    r.target.name,
    r.target.namespace,
    r.installed ?? '-',
    r.target.version,
    `${r.verdict.action}: ${r.verdict.reason}`,
  ])
  const table = renderTable(['RELEASE', 'NAMESPACE', 'INSTALLED', 'TARGET', 'VERDICT'], rows)
  const changes = plan.releases.flatMap((r) => {
    const c = r.valueChanges
    if (!c || c.added.length + c.changed.length === 0) return []
    const parts = [
      ...(c.changed.length ? [`changes ${c.changed.join(', ')}`] : []),
      ...(c.added.length ? [`sets ${c.added.join(', ')}`] : []),
    ]
    return [`  ${r.target.name}: ${parts.join('; ')}`]
  })
  if (changes.length === 0) return table
  return [table, 'Values (every other value set on a release is kept):', ...changes].join('\n')
}

/** The plan as plain data for `--json`. */
export function planToJson(plan: UpgradePlan) {
  return {
    force: plan.force,
    releases: plan.releases.map((r) => ({
      name: r.target.name,
      namespace: r.target.namespace,
      chart: r.target.chart,
      repository: r.target.repository,
      installed: r.installed ?? null,
      target: r.target.version,
      verdict: r.verdict.action,
      reason: r.verdict.reason,
      valueChanges: r.valueChanges ?? null,
    })),
  }
}

export function renderReport(report: UpgradeReport): string {
  const rows = report.releases.map((r) => [r.name, r.outcome, r.reason])
  const lines = [renderTable(['RELEASE', 'RESULT', 'DETAIL'], rows)]
  if (report.backup) {
    const { crds, customResources } = report.backup
    lines.push(
      `Backed up ${crds} ${crds === 1 ? 'CRD' : 'CRDs'} and ${customResources} custom ${customResources === 1 ? 'resource' : 'resources'}.`,
    )
  }
  if (report.backupDir) lines.push(`Backup folder: ${report.backupDir}`)
  if (report.dryRun) lines.push('Dry run: nothing was changed and no backup was written.')
  if (report.declined) lines.push('Upgrade declined: nothing was changed.')
  if (report.failure) lines.push(`Stopped at ${report.failure.release}: ${report.failure.error}`)
  const nothing = report.releases.every((r) => r.outcome === 'skipped')
  if (nothing) lines.push('Nothing to upgrade.')
  return lines.join('\n')
}

/**
 * What an interrupted upgrade leaves behind, for the one message before exit 130/143: which
 * releases changed, which one helm was working on, which were not touched, and the backup.
 */
export function describeInterrupted(report: UpgradeReport, running?: string): string[] {
  const dir = report.backupDir
  if (!dir) return ['Upgrade interrupted before any change: nothing was changed.']
  const started = running !== undefined || report.releases.some((r) => CHANGED.includes(r.outcome))
  if (!started)
    return ['Upgrade interrupted while backing up: nothing was changed.', `Partial backup folder: ${dir}`]
  const lines = ['Upgrade interrupted; releases so far:']
  for (const r of report.releases) {
    if (r.name === running) {
      lines.push(
        `  ${r.name}: in progress: helm was upgrading it to ${r.target} and is left to finish or roll back;` +
          ` check \`helm status ${r.name} -n ${r.namespace}\``,
      )
    } else if (r.outcome === 'not-touched') lines.push(`  ${r.name}: not touched`)
    else lines.push(`  ${r.name}: ${r.outcome} (${r.reason})`)
  }
  lines.push(`Backup folder: ${dir}`)
  return lines
}

const CHANGED = ['upgraded', 'installed', 'rolled-back', 'rollback-failed']
