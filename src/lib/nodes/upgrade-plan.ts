/**
 * The plan of a Kubernetes upgrade: the target (one minor step at a time, no downgrade, only a
 * supported patch), every node in kubeadm's documented order (control planes first: the first runs
 * `kubeadm upgrade apply`, every other node `kubeadm upgrade node`), and which nodes are done. A
 * node is done when the cluster's version (kubeadm-config) and its kubelet are both at the target:
 * its kubelet is replaced only after its kubeadm step, so that is what an interrupted run left
 * finished. An unfinished upgrade to another version is refused until it is finished.
 */
import { createHash } from 'node:crypto'
import { CliError, ExitCode, messageOf } from '../errors/index.js'
import type { AdminNode, KubeApi, NodeAdmin } from '../kube/index.js'
import {
  UPGRADE_REQUEST_ANNOTATION,
  readClusterVersion,
  requestId,
  type NodeUpgradeStep,
} from '../nodeupgrade/index.js'
import {
  encodeComponents,
  parseKubernetesVersion,
  resolveKubernetesVersion,
  type KubernetesComponent,
} from '../versions/index.js'
import type { DrainApi } from './drain.js'
import { readUpgradeRecord, type UpgradeRecord } from './upgrade-record.js'

const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane'

/** The API calls an upgrade makes, over the operator's kubeconfig. */
export type KubernetesUpgradeApi = Pick<
  NodeAdmin,
  'server' | 'listNodes' | 'getNode' | 'cordon' | 'uncordon' | 'annotateNode'
> &
  DrainApi &
  Pick<KubeApi, 'getConfigMap' | 'applyConfigMap'>

/** The target's components and where they come from (said in the plan). */
export interface TargetComponents {
  components: KubernetesComponent[]
  source: string
}

export interface PlannedNode {
  name: string
  role: 'control-plane' | 'worker'
  kubeletVersion?: string
  step: NodeUpgradeStep
  /**
   * `done`: at the target already (an earlier run, or it joined after the control plane moved);
   * `uncordon`: at the target, but an interrupted run left it cordoned after its step.
   */
  action: 'upgrade' | 'done' | 'uncordon'
}

export interface KubernetesUpgradePlan {
  server: string
  /** The version the upgrade started from (the cluster's now, or the unfinished record's). */
  from: string
  /** The cluster's version now (kubeadm-config): `from` until the first control plane moved. */
  clusterVersion: string
  target: string
  id: string
  /** The unfinished record this run continues, if any. */
  resumes?: UpgradeRecord
  components: KubernetesComponent[]
  componentsSource: string
  componentsDigest: string
  nodes: PlannedNode[]
}

export interface PlanDeps {
  api: KubernetesUpgradeApi
  components(target: string): Promise<TargetComponents>
  now(): Date
}

const SHA256_HASH = /^sha256:[0-9a-f]{64}$/

export async function planKubernetesUpgrade(input: string, deps: PlanDeps): Promise<KubernetesUpgradePlan> {
  const { api } = deps
  const target = resolveKubernetesVersion(input)
  const clusterVersion = await readClusterVersion(api).catch((err: unknown) => {
    throw new CliError(`reading the cluster's Kubernetes version at ${api.server}: ${messageOf(err)}`)
  })
  const record = await readUpgradeRecord(api).catch((err: unknown) => {
    throw new CliError(`reading the upgrade record at ${api.server}: ${messageOf(err)}`, {
      hint: 'fix or delete the ConfigMap named above (`kubectl -n kube-system edit configmap …`), then plan again',
    })
  })
  const unfinished = record && record.state !== 'succeeded' ? record : undefined
  if (unfinished && unfinished.target !== target)
    throw new CliError(
      `an upgrade to ${unfinished.target} (${unfinished.id}) is unfinished (${unfinished.state}${unfinished.failure ? `: ${unfinished.failure.node}: ${unfinished.failure.message}` : ''})`,
      {
        exitCode: ExitCode.Usage,
        hint: `finish it first: \`constellation upgrade apply --kubernetes ${unfinished.target}\`; nothing was changed`,
      },
    )
  const from = unfinished?.from ?? clusterVersion
  checkVersionStep(from, target)
  const id = unfinished?.id ?? upgradeId(target, deps.now())
  const nodes = orderNodes(await api.listNodes(), target, clusterVersion, id)
  if (nodes.length === 0) throw new CliError(`the cluster at ${api.server} has no Nodes to upgrade`)
  const notReady = nodes.filter((n) => n.action === 'upgrade' && !n.ready).map((n) => n.name)
  if (notReady.length > 0)
    throw new CliError(`${notReady.join(', ')} ${notReady.length > 1 ? 'are' : 'is'} not Ready`, {
      hint: 'every node an upgrade changes must be Ready first (kubeadm checks the control planes too): `kubectl describe node` says why; nothing was changed',
    })
  const { components, source } = await deps.components(target)
  checkComponents(components, source)
  return {
    server: api.server,
    from,
    clusterVersion,
    target,
    id,
    ...(unfinished && { resumes: unfinished }),
    components,
    componentsSource: source,
    componentsDigest: componentsDigest(components),
    nodes: nodes.map(({ ready: _ready, ...n }) => n),
  }
}

/** One minor step at a time, no downgrade (kubeadm's policy; the same patch again finishes nodes). */
function checkVersionStep(from: string, target: string): void {
  const a = parseKubernetesVersion(from)
  const b = parseKubernetesVersion(target)
  if (!a || !b) throw new CliError(`cannot compare ${from} with ${target}`)
  const refuse = (why: string) =>
    new CliError(`refusing to upgrade Kubernetes ${from} → ${target}: ${why}`, {
      exitCode: ExitCode.Usage,
      hint: 'nothing was changed',
    })
  if (b.major !== a.major) throw refuse('the major version would change')
  if (b.minor < a.minor || (b.minor === a.minor && (b.patch ?? 0) < (a.patch ?? 0)))
    throw refuse('that is a downgrade (kubeadm cannot move a cluster back)')
  if (b.minor - a.minor > 1)
    throw refuse(
      `it skips ${b.minor - a.minor - 1} minor version(s); kubeadm upgrades one minor at a time: go to v${a.major}.${a.minor + 1} first`,
    )
}

type OrderedNode = PlannedNode & { ready: boolean }

/** Control planes first (by name, numbers in order), then workers; the first control plane applies. */
function orderNodes(
  nodes: readonly AdminNode[],
  target: string,
  clusterVersion: string,
  id: string,
): OrderedNode[] {
  const byName = (a: AdminNode, b: AdminNode) => a.name.localeCompare(b.name, 'en', { numeric: true })
  const isControlPlane = (n: AdminNode) => n.labels[CONTROL_PLANE_LABEL] !== undefined
  const ordered = [
    ...nodes.filter(isControlPlane).sort(byName),
    ...nodes.filter((n) => !isControlPlane(n)).sort(byName),
  ]
  return ordered.map((n, i) => ({
    name: n.name,
    role: isControlPlane(n) ? 'control-plane' : 'worker',
    kubeletVersion: n.kubeletVersion,
    step: i === 0 && isControlPlane(n) ? 'apply' : 'node',
    action:
      clusterVersion !== target || n.kubeletVersion !== target
        ? 'upgrade'
        : n.unschedulable && requestId(n.annotations[UPGRADE_REQUEST_ANNOTATION] ?? '').startsWith(`${id}/`)
          ? 'uncordon'
          : 'done',
    ready: n.ready,
  }))
}

/** Every component sha256-pinned: the node refuses one that is not, so refuse it before any node moves. */
function checkComponents(components: readonly KubernetesComponent[], source: string): void {
  if (components.length === 0) throw new CliError(`${source}: no components for the target version`)
  components.forEach((c, i) => {
    if (!SHA256_HASH.test(c.hash))
      throw new CliError(
        `${source}: component ${i} (${c.installPath}): hash ${JSON.stringify(c.hash)} is not sha256:<64 hex digits>`,
        { hint: 'every component must be pinned by its sha256; nothing was changed' },
      )
  })
}

const componentsDigest = (components: readonly KubernetesComponent[]) =>
  `sha256:${createHash('sha256').update(encodeComponents(components)).digest('hex')}`

/** `v1.32.9-20261127t171500z`: readable, sortable, and a valid label value. */
function upgradeId(target: string, now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'z')
    .toLowerCase()
  return `${target}-${stamp}`
}
