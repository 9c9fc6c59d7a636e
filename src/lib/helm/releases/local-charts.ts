import { CliError } from '../../errors/index.js'
import type { Helm } from '../binary/index.js'
import type { ReleaseTarget } from './releases.js'

/**
 * Helm ignores --version for chart paths, so a local chart must really hold the pinned version.
 * The charts are read at once (a helm process each); the first release in order that fails is named.
 */
export async function checkLocalCharts(helm: Helm, targets: readonly ReleaseTarget[]): Promise<void> {
  const checks = targets.filter((x) => !x.repository).map((t) => checkLocalChart(helm, t))
  const settled = await Promise.allSettled(checks)
  for (const check of settled) if (check.status === 'rejected') throw check.reason
}

async function checkLocalChart(helm: Helm, t: ReleaseTarget): Promise<void> {
  const actual = await helm.localChartVersion(t.chart).catch((err: unknown) => {
    throw new CliError(`release ${t.name}: chart ${t.chart} cannot be read`, {
      hint: 'check upgrade.charts[].chart',
      cause: err,
    })
  })
  if (actual !== t.version) {
    throw new CliError(
      `release ${t.name}: chart ${t.chart} holds version ${actual}, but the config pins ${t.version}`,
      { hint: 'make upgrade.charts[].version match the chart, or point chart at the right one' },
    )
  }
}
