/** From a workspace to a plan: config and state, pinned releases, helm, what the cluster runs now. */
import { access } from 'node:fs/promises'
import { loadConfig, loadStateIfPresent } from '../config/index.js'
import { CliError, ExitCode, isErrnoException } from '../errors/index.js'
import { workspacePaths } from '../paths.js'
import { CommandFailedError, type Runner } from '../system/index.js'
import { Helm, type HelmBounds } from './helm.js'
import { helmSaidUnreachable } from './helm-failure.js'
import { planUpgrade, type UpgradePlan } from './plan.js'
import { clusterFacts, resolveReleases, type ReleaseTarget } from './releases.js'

export interface PrepareOptions {
  workspace: string
  /** Defaults to the workspace's admin kubeconfig. */
  kubeconfig?: string
  force: boolean
}

export interface HelmDeps {
  runner: Runner
  /** Environment of every helm call; its PATH decides which helm runs. */
  env: NodeJS.ProcessEnv
  helmBinary?: string
  /** How long each helm process may run (tests shorten them). */
  helmBounds?: Partial<HelmBounds>
}

export interface PreparedUpgrade {
  plan: UpgradePlan
  helm: Helm
  kubeconfig: string
}

export async function prepareUpgrade(opts: PrepareOptions, deps: HelmDeps): Promise<PreparedUpgrade> {
  const paths = workspacePaths(opts.workspace)
  const config = await loadConfig(paths.config)
  // without a state, values that need it (the API endpoint) are left to the chart
  const state = await loadStateIfPresent(paths.state)
  const targets = await resolveReleases(config, clusterFacts(config, state), paths.dir)
  const kubeconfig = opts.kubeconfig ?? paths.adminConf
  await access(kubeconfig).catch((err: unknown) => {
    throw new CliError(
      `kubeconfig ${kubeconfig} ${isErrnoException(err, 'ENOENT') ? 'does not exist' : 'cannot be read'}`,
      { hint: 'pass --kubeconfig PATH, or run in the workspace of an initialized cluster', cause: err },
    )
  })
  const helm = await Helm.detect({
    runner: deps.runner,
    binary: deps.helmBinary ?? 'helm',
    env: deps.env,
    kubeconfig,
    bounds: deps.helmBounds,
  })
  await checkLocalCharts(helm, targets)
  const installed = await helm.listReleases().catch((err: unknown) => {
    // Blame the cluster only when helm did, or when the read got no answer in time.
    const unreachable = helmSaidUnreachable(err) || (err instanceof CommandFailedError && err.timedOut)
    throw new CliError('reading the installed Helm releases', {
      exitCode: unreachable ? ExitCode.Unreachable : ExitCode.Failure,
      hint: unreachable
        ? `check that the cluster in ${kubeconfig} is reachable from here`
        : "see helm's message above; check the helm installation",
      cause: err,
    })
  })
  return { plan: planUpgrade(targets, installed, { force: opts.force }), helm, kubeconfig }
}

/** Helm ignores --version for chart paths, so a local chart must really hold the pinned version. */
async function checkLocalCharts(helm: Helm, targets: readonly ReleaseTarget[]): Promise<void> {
  for (const t of targets.filter((x) => !x.repository)) {
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
}
