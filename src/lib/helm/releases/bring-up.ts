/**
 * The bring-up after kubeadm init, as Constellation's apply does it: the pinned releases (CNI
 * first: nothing else schedules without it) installed one by one with the same helm code as an
 * upgrade, each a visible step. Values go to helm on stdin: no file is left behind when init is
 * interrupted, and they never reach argv.
 */
import type { ClusterConfig, ClusterState } from '../../config/index.js'
import type { Step } from '../../system/index.js'
import { stringifyYaml } from '../../yaml/index.js'
import { factsFromWorkspace } from './cluster-facts.js'
import { API_COMING_UP, kubeconfigServer, listInstalledReleases } from './cluster-reachable.js'
import { detectHelm, type HelmProcessDeps } from '../binary/index.js'
import { checkLocalCharts } from './local-charts.js'
import { upgradeRelease } from './release-upgrade.js'
import { loadChartOverrides, resolveReleases, type ReleaseTarget } from './releases.js'

export interface BringUpOptions {
  workspaceDir: string
  config: ClusterConfig
  state: ClusterState
  /** The admin kubeconfig init just saved. */
  kubeconfig: string
  /** kube-proxy runs (init --conformance): Cilium must not replace it. */
  conformance: boolean
  /** How long each release may take to become ready. */
  helmTimeoutMs: number
  /** false (--skip-helm-wait): helm returns once the objects are written. */
  wait: boolean
}

export interface BringUp {
  releases: readonly ReleaseTarget[]
  /** A wait for the API, then one step per release, in apply order; a failed one throws and stops the rest. */
  steps: Step[]
  /** Which releases are installed so far (for the report and an interrupt). */
  installed: () => string[]
}

export interface BringUpDeps extends HelmProcessDeps {
  /** Between retries (tests record instead of waiting). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export async function prepareBringUp(opts: BringUpOptions, deps: BringUpDeps): Promise<BringUp> {
  const facts = { ...factsFromWorkspace(opts), kubeProxyReplacement: !opts.conformance }
  const overrides = await loadChartOverrides(opts.config, opts.workspaceDir)
  const releases = resolveReleases(opts.config.kubernetesVersion, overrides, facts)
  const helm = await detectHelm(deps, opts.kubeconfig)
  await checkLocalCharts(helm, releases)
  const server = (await kubeconfigServer(opts.kubeconfig)) ?? `the cluster in ${opts.kubeconfig}`
  // Upgrade's first question, with init's patience: an unreachable cluster is exit 3 within
  // seconds, each retry said, not after a release's 30 s retries in silence.
  const waitForApi: Step = {
    title: `Waiting for the Kubernetes API at ${server} to answer helm`,
    run: async (report) => {
      await listInstalledReleases(helm, opts.kubeconfig, { ...API_COMING_UP, sleep: deps.sleep, report })
    },
  }
  const done: string[] = []
  const steps = releases.map((target): Step => ({
    title: `Installing ${target.name} ${target.version} in ${target.namespace}${opts.wait ? '' : ' (not waiting for it)'}`,
    run: async (report) => {
      // nothing is installed yet: an install, which helm removes again if it fails
      const result = await upgradeRelease(
        helm,
        { target },
        { yaml: stringifyYaml(target.values) },
        { timeoutMs: opts.helmTimeoutMs, wait: opts.wait, sleep: deps.sleep, report },
      )
      if (result.error) throw new Error(`${target.name}: ${result.error} (${result.reason})`)
      done.push(target.name)
    },
  }))
  return {
    releases,
    steps: [waitForApi, ...steps],
    installed: () => [...done],
  }
}
