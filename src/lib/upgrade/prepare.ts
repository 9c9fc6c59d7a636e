/**
 * From a kubeconfig to a plan. The cluster says what it runs (Kubernetes version, installed
 * releases and their values); the pinned release set for that version is the target. A workspace
 * config, when there is one, may override charts; the state, when there is one, names the API
 * endpoint. No config is needed.
 */
import { access } from 'node:fs/promises'
import { loadConfigIfPresent, loadStateIfPresent } from '../config/index.js'
import { CliError, ExitCode, exitCodeOf, isErrnoException } from '../errors/index.js'
import { workspacePaths } from '../paths.js'
import {
  checkLocalCharts,
  describeCluster,
  detectHelm,
  type Helm,
  listInstalledReleases,
  loadChartOverrides,
  mergeValues,
  resolveReleases,
  valueChanges,
  type HelmProcessDeps,
} from '../helm/index.js'
import type { ClusterReader } from './kube-reader.js'
import { planUpgrade, type UpgradePlan } from './plan.js'

export interface PrepareOptions {
  workspace: string
  /** Defaults to the workspace's admin kubeconfig. */
  kubeconfig?: string
  force: boolean
}

export interface HelmDeps extends HelmProcessDeps {
  /** The cluster's API, read through the same kubeconfig helm uses. */
  openReader: (kubeconfig: string) => ClusterReader | Promise<ClusterReader>
}

export interface PreparedUpgrade {
  plan: UpgradePlan
  helm: Helm
  kubeconfig: string
  reader: ClusterReader
  /** The version the API server reported; it chose the pinned releases. */
  kubernetesVersion: string
}

export async function prepareUpgrade(opts: PrepareOptions, deps: HelmDeps): Promise<PreparedUpgrade> {
  const paths = workspacePaths(opts.workspace)
  const config = await loadConfigIfPresent(paths.config)
  const state = await loadStateIfPresent(paths.state)
  const overrides = await loadChartOverrides(config, paths.dir)
  const kubeconfig = opts.kubeconfig ?? paths.adminConf
  await access(kubeconfig).catch((err: unknown) => {
    throw new CliError(
      `kubeconfig ${kubeconfig} ${isErrnoException(err, 'ENOENT') ? 'does not exist' : 'cannot be read'}`,
      { hint: 'pass --kubeconfig PATH, or run in the workspace of an initialized cluster', cause: err },
    )
  })
  const helm = await detectHelm(deps, kubeconfig)
  const installed = await listInstalledReleases(helm, kubeconfig)
  const reader = await deps.openReader(kubeconfig)
  const cluster = await describeCluster(reader, { config, state }).catch((err: unknown) => {
    const unreachable = exitCodeOf(err) === ExitCode.Unreachable
    throw new CliError('reading what the cluster runs', {
      exitCode: unreachable ? ExitCode.Unreachable : ExitCode.Failure,
      hint: unreachable ? `check that the cluster in ${kubeconfig} is reachable from here` : undefined,
      cause: err,
    })
  })
  const targets = resolveReleases(cluster.kubernetesVersion, overrides, cluster.facts)
  await checkLocalCharts(helm, targets)
  const plan = planUpgrade(targets, installed, { force: opts.force })
  await keepUserValues(helm, plan)
  return { plan, helm, kubeconfig, reader, kubernetesVersion: cluster.kubernetesVersion }
}

/**
 * Values set on an installed release (by the operator, or by an earlier install) survive: the
 * target's values go on top of them, and the plan records which keys that adds or changes.
 */
async function keepUserValues(helm: Helm, plan: UpgradePlan): Promise<void> {
  for (const r of plan.releases) {
    if (r.verdict.action === 'skip') continue
    const before =
      r.installed === undefined
        ? {}
        : await helm.userValues(r.target.name, r.target.namespace).catch((err: unknown) => {
            throw new CliError(`reading the values of release ${r.target.name}`, { cause: err })
          })
    const merged = mergeValues(before, r.target.values)
    r.valueChanges = valueChanges(before, merged)
    r.target = { ...r.target, values: merged }
  }
}
