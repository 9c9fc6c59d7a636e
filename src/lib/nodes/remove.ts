/**
 * `constellation node remove`: retires one node of a running cluster, in the order Constellation's
 * node operator uses: cordon and drain (evictions), the etcd member of a control plane (never below
 * a safe quorum), the Node, then what lets the node's disk come back: its disk records (so a rejoin
 * is refused, "not a state disk of this cluster") and the bootstrap tokens issued to it. A plan is
 * shown and confirmed first; an interrupted removal is resumed by running it again (each step
 * finds what is already done).
 */
import { CliError, UsageError } from '../errors/index.js'
import {
  BOOTSTRAP_TOKEN_NODE_LABEL,
  tokenNodeLabelValue,
  type AdminNode,
  type NamedObject,
  type NodeAdmin,
} from '../kube/index.js'
import { drainActions, drainNode, type DrainClock, type PodAction } from './drain.js'
import { checkQuorum, memberOf, type EtcdMember, type EtcdMembership } from './etcd.js'

/** The join service's disk records (docs/protocol.md): one ConfigMap per disk, `data.node` names its node. */
export const DISK_RECORD_NAMESPACE = 'kube-system'
export const DISK_RECORD_SELECTOR = 'constellation.io/state-disk=true'
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane'

export type NodeRole = 'control-plane' | 'worker'

export interface RemovalPlan {
  node: string
  server: string
  role: NodeRole
  /** False when an earlier run deleted the Node already: only what is left is removed. */
  nodeExists: boolean
  pods: PodAction[]
  /** A control plane's etcd member, and how many members remain after it. */
  etcd?: { member: EtcdMember; membersAfter: number; where: string }
  diskRecords: string[]
  bootstrapTokens: string[]
}

export interface RemovalDeps {
  api: NodeAdmin
  /** The cluster's etcd; undefined where the tool cannot reach it (then a control plane is refused). */
  etcd?: EtcdMembership
  clock: DrainClock
  /** Asks the operator; undefined when nobody can answer (no TTY). */
  confirm?: (question: string) => Promise<boolean>
  progress: (line: string) => void
}

export interface RemovalReport {
  node: string
  declined: boolean
  cordoned: boolean
  evicted: string[]
  kept: string[]
  etcdMemberRemoved?: string
  nodeDeleted: boolean
  diskRecordsDeleted: string[]
  bootstrapTokensDeleted: string[]
}

/** The cluster has neither the Node nor anything else that names it: nothing to remove. */
export class NodeNotFoundError extends CliError {
  constructor(
    readonly node: string,
    server: string,
  ) {
    super(`the cluster at ${server} has no Node ${JSON.stringify(node)} and no disk record of it`, {
      hint: '`kubectl get nodes` lists its nodes; nothing was changed',
    })
    this.name = 'NodeNotFoundError'
  }
}

const roleOf = (node: AdminNode): NodeRole =>
  node.labels[CONTROL_PLANE_LABEL] !== undefined ? 'control-plane' : 'worker'

async function diskRecordsOf(api: NodeAdmin, node: string): Promise<NamedObject[]> {
  return (await api.listConfigMaps(DISK_RECORD_NAMESPACE, DISK_RECORD_SELECTOR)).filter(
    (cm) => cm.data.node === node,
  )
}

const tokenSelector = (node: string) => `${BOOTSTRAP_TOKEN_NODE_LABEL}=${tokenNodeLabelValue(node)}`

/** What removing `name` will do; refuses (changing nothing) what would break the cluster. */
export async function planNodeRemoval(
  name: string,
  deps: Pick<RemovalDeps, 'api' | 'etcd'>,
): Promise<RemovalPlan> {
  const { api } = deps
  const node = await api.getNode(name)
  const records = await diskRecordsOf(api, name)
  const tokens = (await api.listSecrets(DISK_RECORD_NAMESPACE, tokenSelector(name))).map((s) => s.name)
  if (!node && records.length === 0 && tokens.length === 0) throw new NodeNotFoundError(name, api.server)
  const role: NodeRole = node
    ? roleOf(node)
    : records[0]?.data.role === 'control-plane'
      ? 'control-plane'
      : 'worker'
  const plan: RemovalPlan = {
    node: name,
    server: api.server,
    role,
    nodeExists: node !== undefined,
    pods: node ? drainActions(await api.podsOn(name)) : [],
    diskRecords: records.map((r) => r.name),
    bootstrapTokens: tokens,
  }
  if (role === 'control-plane') plan.etcd = await planEtcd(name, node, deps)
  return plan
}

async function planEtcd(name: string, node: AdminNode | undefined, deps: Pick<RemovalDeps, 'api' | 'etcd'>) {
  const controlPlanes = (await deps.api.listNodes()).filter((n) => roleOf(n) === 'control-plane')
  if (node && controlPlanes.length <= 1)
    throw new CliError(`refusing to remove ${name}: it is the cluster's last control plane`, {
      hint: 'a cluster without a control plane is gone: `mini down` (or deleting the machines) retires it; nothing was changed',
    })
  if (!deps.etcd)
    throw new CliError(
      `refusing to remove control plane ${name}: its etcd member must be removed too, and this build reaches etcd only in a mini cluster's simulator`,
      {
        hint: 'remove its member with `etcdctl member remove` on another control plane, then `kubectl delete node`; nothing was changed',
      },
    )
  const members = await deps.etcd.members()
  const member = memberOf(members, name, node?.internalIP)
  // removed by an earlier run: nothing left to do in etcd
  if (!member) return undefined
  checkQuorum(name, members, deps.etcd.where)
  return { member, membersAfter: members.length - 1, where: deps.etcd.where }
}

export async function removeNode(
  plan: RemovalPlan,
  opts: { yes: boolean; drainTimeoutMs: number },
  deps: RemovalDeps,
): Promise<RemovalReport> {
  const report: RemovalReport = {
    node: plan.node,
    declined: false,
    cordoned: false,
    evicted: [],
    kept: [],
    nodeDeleted: false,
    diskRecordsDeleted: [],
    bootstrapTokensDeleted: [],
  }
  if (!(await confirmed(plan, opts.yes, deps))) return { ...report, declined: true }
  const { api } = deps
  if (plan.nodeExists) {
    deps.progress(`cordoning ${plan.node}`)
    await api.cordon(plan.node)
    report.cordoned = true
    const drained = await drainNode(plan.node, api, deps.clock, {
      timeoutMs: opts.drainTimeoutMs,
      progress: deps.progress,
    })
    report.evicted = drained.evicted
    report.kept = drained.kept
  }
  if (plan.etcd && deps.etcd) {
    deps.progress(
      `removing etcd member ${plan.etcd.member.name} (${plan.etcd.member.id}) from ${plan.etcd.where}`,
    )
    await deps.etcd.remove(plan.etcd.member)
    report.etcdMemberRemoved = plan.etcd.member.id
  }
  if (plan.nodeExists) {
    deps.progress(`deleting Node ${plan.node}`)
    await api.deleteNode(plan.node)
    report.nodeDeleted = true
  }
  // listed again: a join under way may have recorded a disk or taken a token since the plan
  for (const record of await diskRecordsOf(api, plan.node)) {
    await api.deleteConfigMap(DISK_RECORD_NAMESPACE, record.name)
    report.diskRecordsDeleted.push(record.name)
  }
  for (const token of await api.listSecrets(DISK_RECORD_NAMESPACE, tokenSelector(plan.node))) {
    await api.deleteSecret(DISK_RECORD_NAMESPACE, token.name)
    report.bootstrapTokensDeleted.push(token.name)
  }
  return report
}

async function confirmed(plan: RemovalPlan, yes: boolean, deps: RemovalDeps): Promise<boolean> {
  if (yes) return true
  if (!deps.confirm)
    throw new UsageError(
      `refusing to remove ${plan.node} without confirmation: this is not an interactive terminal`,
      'review the plan above, then rerun with --yes; nothing was changed',
    )
  return deps.confirm(`Remove ${plan.node} from the cluster? Its disk can never rejoin.`)
}
