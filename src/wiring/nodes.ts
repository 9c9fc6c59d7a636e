/**
 * `constellation node remove` with its production parts: the Kubernetes API through the workspace's
 * admin kubeconfig (or --kubeconfig), etcd (only a mini cluster's, SIMULATED: this build has no etcd
 * client), the prompt on the process's terminal, and the real clock.
 */
import { confirm } from '@inquirer/prompts'
import { openNodeAdmin } from '../lib/kube/index.js'
import { readMiniRecord, simulatedEtcd } from '../lib/mini/index.js'
import type { RemovalPlan } from '../lib/nodes/index.js'
import { planNodeRemoval, removeNode } from '../lib/nodes/index.js'
import { workspacePaths } from '../lib/paths.js'
import { canPrompt, processTerminal, promptOrAbort } from '../lib/ui/index.js'

/** Asks on the terminal, or undefined when nobody can answer (then --yes is needed). */
export function terminalConfirm(what: string): ((question: string) => Promise<boolean>) | undefined {
  return canPrompt(processTerminal())
    ? (message) => promptOrAbort(what, () => confirm({ message, default: false }))
    : undefined
}

export interface NodeRemoveSettings {
  workspace: string
  kubeconfig?: string
  name: string
  yes: boolean
  drainTimeoutMs: number
  progress: (line: string) => void
  showPlan: (plan: RemovalPlan) => void
  /** Called first when the cluster is a mini cluster's (its Kubernetes and etcd SIMULATED). */
  onSimulated: () => void
}

/** Whether the workspace is a mini cluster's (its etcd is the simulator's). */
export const isMiniWorkspace = async (workspace: string) => (await readMiniRecord(workspace)) !== undefined

export async function runNodeRemove(s: NodeRemoveSettings) {
  const api = await openNodeAdmin(s.kubeconfig ?? workspacePaths(s.workspace).adminConf)
  const mini = s.kubeconfig === undefined && (await isMiniWorkspace(s.workspace))
  if (mini) s.onSimulated()
  const deps = {
    api,
    etcd: mini ? simulatedEtcd(api) : undefined,
    clock: { now: () => Date.now(), sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) },
    confirm: terminalConfirm('node removal'),
    progress: s.progress,
  }
  const plan = await planNodeRemoval(s.name, deps)
  s.showPlan(plan)
  const report = await removeNode(plan, { yes: s.yes, drainTimeoutMs: s.drainTimeoutMs }, deps)
  return { plan, report, simulated: mini }
}
