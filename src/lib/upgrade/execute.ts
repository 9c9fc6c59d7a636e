/**
 * Executes a plan: confirmation, backups before any change, then release by release with Helm's
 * rollback on failure; the first failed release stops the sequence. Never throws after a change
 * was made: the report says what happened to every release, and where the backup is.
 */
import { CliError, ExitCode, exitCodeOf, UsageError } from '../errors/index.js'
import { workspacePaths } from '../paths.js'
import type { Progress, Step } from '../system/index.js'
import {
  backupChart,
  backupCustomResources,
  createUpgradeFolder,
  newUpgradeId,
  type ClusterBackupSummary,
} from './backup.js'
import type { Helm } from '../helm/index.js'
import type { ClusterReader } from './kube-reader.js'
import { planChangesCluster, type PlannedRelease } from './plan.js'
import type { PreparedUpgrade } from './prepare.js'
import { upgradeRelease, type RetryPolicy } from '../helm/index.js'
import { describeInterrupted } from './report.js'

export interface ExecuteOptions {
  workspace: string
  yes: boolean
  dryRun: boolean
  /** How long each release's upgrade may take, and again an explicit rollback. */
  helmTimeoutMs: number
}

export interface ExecuteDeps {
  /** Opened only when a backup is made: dry runs and no-op plans never touch the API. */
  openReader: () => ClusterReader | Promise<ClusterReader>
  /** Asks the operator; undefined when nobody can answer (no TTY). */
  confirm?: (question: string) => Promise<boolean>
  /** Shows the steps (the command's listr2 rendering, or nothing for --json). */
  progress: Progress
  now: () => Date
  retry?: Partial<RetryPolicy>
  /**
   * Takes over Ctrl-C/SIGTERM while the upgrade runs: `describe` says what is left behind (when the
   * signal comes). Returns the function that hands the signals back.
   */
  onInterrupt?: (describe: () => string[]) => () => void
}

export type ReleaseOutcome =
  | 'upgraded'
  | 'installed'
  | 'rolled-back'
  | 'rollback-failed'
  | 'skipped'
  | 'not-touched'
  | 'would-upgrade'
  | 'would-install'

export interface ReleaseReport {
  name: string
  namespace: string
  installed?: string
  target: string
  outcome: ReleaseOutcome
  reason: string
  attempts?: number
}

export interface UpgradeReport {
  dryRun: boolean
  /** Whether the operator said no: nothing was changed. */
  declined: boolean
  backupDir?: string
  backup?: ClusterBackupSummary
  releases: ReleaseReport[]
  /** The release whose failure stopped the sequence, with Helm's error. */
  failure?: { release: string; error: string }
}

export async function executeUpgrade(
  prepared: PreparedUpgrade,
  opts: ExecuteOptions,
  deps: ExecuteDeps,
): Promise<UpgradeReport> {
  const { plan } = prepared
  const report: UpgradeReport = {
    dryRun: opts.dryRun,
    declined: false,
    releases: plan.releases.map(initialReport),
  }
  if (!planChangesCluster(plan)) return report
  if (opts.dryRun) return markDryRun(report)
  const live: LiveState = {}
  const handBack = deps.onInterrupt?.(() => describeInterrupted(report, live.running))
  try {
    return await confirmedUpgrade(prepared, opts, deps, report, live)
  } finally {
    handBack?.()
  }
}

/** What an interrupt needs to know that the report does not say yet. */
interface LiveState {
  /** The release whose helm upgrade is running now. */
  running?: string
}

async function confirmedUpgrade(
  { plan, helm }: PreparedUpgrade,
  opts: ExecuteOptions,
  deps: ExecuteDeps,
  report: UpgradeReport,
  live: LiveState,
): Promise<UpgradeReport> {
  const reports = report.releases
  if (!(await confirmed(opts, deps))) return markDeclined(report)

  const dir = await createUpgradeFolder(workspacePaths(opts.workspace).upgradeDir, newUpgradeId(deps.now()))
  report.backupDir = dir
  const todo = plan.releases.filter((r) => r.verdict.action !== 'skip')
  const valuesFiles = new Map<string, string>()
  const steps: Step[] = [
    {
      title: 'Back up CRDs and custom resources',
      run: async () => {
        report.backup = await backupCustomResources(await deps.openReader(), dir)
      },
    },
    {
      title: 'Save charts and values',
      run: async () => {
        for (const r of todo) valuesFiles.set(r.target.name, (await backupChart(helm, r, dir)).valuesFile)
      },
    },
    ...todo.map((r) =>
      releaseStep(helm, r, () => valuesFiles.get(r.target.name) ?? '', report, opts, deps, live),
    ),
  ]
  try {
    await deps.progress(steps)
  } catch (err) {
    const failed = report.failure
    if (!failed) {
      // A backup step failed: nothing was changed, and the upgrade must not go on without one.
      const unreachable = exitCodeOf(err) === ExitCode.Unreachable
      throw new CliError(
        `backing up before the upgrade failed; nothing was changed (partial backup in ${dir})`,
        {
          exitCode: unreachable ? ExitCode.Unreachable : ExitCode.Failure,
          hint: unreachable
            ? 'check that the cluster is reachable from here, then run the upgrade again'
            : undefined,
          cause: err,
        },
      )
    }
    for (const r of reports) {
      if (r.outcome === 'not-touched' && r.reason === 'planned')
        r.reason = `not reached: ${failed.release} failed`
    }
  }
  return report
}

/** Upgrades one release; a failure is recorded in the report, then thrown to stop the sequence. */
function releaseStep(
  helm: Helm,
  r: PlannedRelease,
  valuesFile: () => string,
  report: UpgradeReport,
  opts: ExecuteOptions,
  deps: ExecuteDeps,
  live: LiveState,
): Step {
  return {
    title: `${r.verdict.action === 'install' ? 'Install' : 'Upgrade'} ${r.target.name} ${r.target.version}`,
    run: async (say) => {
      live.running = r.target.name
      const result = await upgradeRelease(
        helm,
        r,
        { file: valuesFile() },
        {
          timeoutMs: opts.helmTimeoutMs,
          report: say,
          ...deps.retry,
        },
      ).finally(() => (live.running = undefined))
      const entry = report.releases.find((x) => x.name === r.target.name)
      if (entry)
        Object.assign(entry, { outcome: result.outcome, reason: result.reason, attempts: result.attempts })
      if (result.error) {
        report.failure = { release: r.target.name, error: result.error }
        throw new Error(`${r.target.name}: ${result.error}`)
      }
    },
  }
}

function markDryRun(report: UpgradeReport): UpgradeReport {
  for (const r of report.releases) {
    if (r.outcome !== 'not-touched') continue
    r.outcome = r.installed === undefined ? 'would-install' : 'would-upgrade'
    r.reason = `dry run: ${r.reason}`
  }
  return report
}

function markDeclined(report: UpgradeReport): UpgradeReport {
  report.declined = true
  for (const r of report.releases) if (r.outcome === 'not-touched') r.reason = 'declined at the confirmation'
  return report
}

async function confirmed(opts: ExecuteOptions, deps: ExecuteDeps): Promise<boolean> {
  if (opts.yes) return true
  if (!deps.confirm) {
    // a missing flag, as for `config measurements`: a usage error
    throw new UsageError(
      'refusing to upgrade without confirmation: this is not an interactive terminal',
      'review the plan (`constellation upgrade check`), then rerun with --yes; nothing was changed',
    )
  }
  return deps.confirm('Upgrade the releases above? A backup is made first.')
}

function initialReport(r: PlannedRelease): ReleaseReport {
  const base = {
    name: r.target.name,
    namespace: r.target.namespace,
    installed: r.installed,
    target: r.target.version,
  }
  return r.verdict.action === 'skip'
    ? { ...base, outcome: 'skipped', reason: r.verdict.reason }
    : { ...base, outcome: 'not-touched', reason: 'planned' }
}
