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
  return renderTable(['RELEASE', 'NAMESPACE', 'INSTALLED', 'TARGET', 'VERDICT'], rows)
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
    })),
  }
}

export function renderReport(report: UpgradeReport): string {
  const rows = report.releases.map((r) => [r.name, r.outcome, r.reason])
  const lines = [renderTable(['RELEASE', 'RESULT', 'DETAIL'], rows)]
  if (report.backup) {
    lines.push(`Backed up ${report.backup.crds} CRDs and ${report.backup.customResources} custom resources.`)
  }
  if (report.backupDir) lines.push(`Backup folder: ${report.backupDir}`)
  if (report.dryRun) lines.push('Dry run: nothing was changed and no backup was written.')
  if (report.declined) lines.push('Upgrade declined: nothing was changed.')
  if (report.failure) lines.push(`Stopped at ${report.failure.release}: ${report.failure.error}`)
  const nothing = report.releases.every((r) => r.outcome === 'skipped')
  if (nothing) lines.push('Nothing to upgrade.')
  return lines.join('\n')
}
