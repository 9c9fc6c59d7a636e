/**
 * `constellation upgrade apply --kubernetes` with its production parts: the Kubernetes API through
 * the workspace's admin kubeconfig (or --kubeconfig), the target's components (the config's mirrors
 * when the config names the target, a mini cluster's simulated kubeadm and kubelet, else the pinned
 * table), the prompt on the process's terminal, and the real clock.
 */
import { loadConfigIfPresent } from '../lib/config/index.js'
import { CliError, ExitCode } from '../lib/errors/index.js'
import { openKubeApi, openNodeAdmin } from '../lib/kube/index.js'
import {
  planKubernetesUpgrade,
  runKubernetesUpgrade,
  type KubernetesUpgradeApi,
  type KubernetesUpgradePlan,
  type TargetComponents,
} from '../lib/nodes/index.js'
import { workspacePaths } from '../lib/paths.js'
import { simulatedComponents, simulatorPaths } from '../lib/simulator/index.js'
import { componentsFor } from '../lib/versions/index.js'
import { isMiniWorkspace, terminalConfirm } from './nodes.js'

export interface KubernetesUpgradeSettings {
  workspace: string
  kubeconfig?: string
  version: string
  yes: boolean
  drainTimeoutMs: number
  nodeTimeoutMs: number
  progress: (line: string) => void
  showPlan: (plan: KubernetesUpgradePlan) => void
  /** Called first when the cluster is a mini cluster's (its kubeadm and kubelet SIMULATED). */
  onSimulated: () => void
}

async function openUpgradeApi(kubeconfig: string): Promise<KubernetesUpgradeApi> {
  const [admin, kube] = await Promise.all([openNodeAdmin(kubeconfig), openKubeApi(kubeconfig)])
  return {
    ...admin,
    getConfigMap: (namespace, name) => kube.getConfigMap(namespace, name),
    applyConfigMap: (namespace, name, data) => kube.applyConfigMap(namespace, name, data),
  }
}

/** Where the target's components come from, said in the plan. */
export async function targetComponents(
  target: string,
  workspace: { configFile?: string; mini: boolean },
): Promise<TargetComponents> {
  const config = workspace.configFile ? await loadConfigIfPresent(workspace.configFile) : undefined
  const mirrors = config?.kubernetesComponents
  if (mirrors?.length && config?.kubernetesVersion === target)
    return {
      components: mirrors.map((c) => ({
        url: c.url,
        hash: c.hash ?? '',
        installPath: c.installPath,
        extract: c.extract ?? false,
      })),
      source: `the config's kubernetesComponents (${workspace.configFile})`,
    }
  if (workspace.mini) {
    const simulator = simulatorPaths()
    return {
      components: simulatedComponents(target, {
        nodeBinary: process.execPath,
        kubeadmFake: simulator.kubeadmFake,
        kubeletUnit: simulator.kubeletUnit,
      }),
      source: "mini's simulator (the kubeadm fake and kubelet stand-in of the target: SIMULATED)",
    }
  }
  if (mirrors?.length)
    throw new CliError(
      `${workspace.configFile}: kubernetesComponents are the mirrors of ${config?.kubernetesVersion}, not of ${target}`,
      {
        exitCode: ExitCode.Usage,
        hint: `set kubernetesVersion: ${target} and kubernetesComponents to its mirrors (or remove kubernetesComponents to use the pinned dl.k8s.io ones); nothing was changed`,
      },
    )
  return { components: componentsFor(target), source: 'the versions table (dl.k8s.io, sha256-pinned)' }
}

export async function runKubernetesUpgradeCommand(s: KubernetesUpgradeSettings) {
  const paths = workspacePaths(s.workspace)
  const api = await openUpgradeApi(s.kubeconfig ?? paths.adminConf)
  const mini = s.kubeconfig === undefined && (await isMiniWorkspace(s.workspace))
  if (mini) s.onSimulated()
  const clock = {
    now: () => Date.now(),
    date: () => new Date(),
    sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
  }
  const plan = await planKubernetesUpgrade(s.version, {
    api,
    now: clock.date,
    components: (target) =>
      targetComponents(target, { configFile: s.kubeconfig ? undefined : paths.config, mini }),
  })
  s.showPlan(plan)
  const report = await runKubernetesUpgrade(
    plan,
    { yes: s.yes, drainTimeoutMs: s.drainTimeoutMs, nodeTimeoutMs: s.nodeTimeoutMs },
    { api, clock, confirm: terminalConfirm('Kubernetes upgrade'), progress: s.progress },
  )
  return { plan, report, simulated: mini }
}
