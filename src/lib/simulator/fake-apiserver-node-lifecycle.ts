/**
 * kube-controller-manager's node lifecycle controller, as the FakeApiServer TEST DOUBLE runs it
 * (kubernetes pkg/controller/nodelifecycle, `tryUpdateNodeHealth` and the tainting passes). Every
 * monitor period it looks at each Node's two heartbeats: the Ready condition's lastHeartbeatTime,
 * which the kubelet posts with the node's status, and the renewTime of the node's Lease in
 * kube-node-lease, which the kubelet renews every 10 s. It notes, on its own clock, when it last saw
 * either change. A node with no new heartbeat for the grace period (40 s by default) gets its Ready,
 * MemoryPressure, DiskPressure and PIDPressure conditions set to Unknown, reason NodeStatusUnknown,
 * "Kubelet stopped posting node status." (a condition its kubelet never posted is added as
 * NodeStatusNeverUpdated). A node whose Ready condition is Unknown gets the
 * node.kubernetes.io/unreachable taints (NoSchedule and NoExecute); a node that is False gets the
 * not-ready ones. When the kubelet posts Ready again, the taints go. Nothing is evicted: no pods run.
 */
import type { KubeObject } from './fake-apiserver.js'

/** kube-controller-manager's --node-monitor-grace-period default. */
export const NODE_MONITOR_GRACE_PERIOD_MS = 40_000
/** kube-controller-manager's --node-monitor-period default. */
export const NODE_MONITOR_PERIOD_MS = 5_000

/** What the controller needs from the server: the Nodes, their Leases, and a write as a controller's. */
export interface NodeLifecycleHost {
  nodes(): KubeObject[]
  lease(node: string): KubeObject | undefined
  store(node: KubeObject): void
}

export interface NodeLifecycleOptions {
  gracePeriodMs: number
  monitorPeriodMs: number
  now?: () => number
}

const UNREACHABLE = 'node.kubernetes.io/unreachable'
const NOT_READY = 'node.kubernetes.io/not-ready'
/** The conditions the controller marks Unknown (not NetworkUnavailable: the network plugin's). */
const MONITORED = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure']

interface Condition {
  type?: string
  status?: string
  reason?: string
  message?: string
  lastHeartbeatTime?: string
  lastTransitionTime?: string
}
interface Taint {
  key?: string
  effect?: string
  timeAdded?: string
}

/** When the controller last saw a node's heartbeats change (its probeTimestamp). */
interface Health {
  heartbeat?: string
  renewTime?: string
  probeMs: number
}

const conditionsOf = (node: KubeObject) =>
  (node.status as { conditions?: Condition[] } | undefined)?.conditions ?? []
const taintsOf = (node: KubeObject) => (node.spec as { taints?: Taint[] } | undefined)?.taints ?? []
const time = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export class NodeLifecycleController {
  private readonly health = new Map<string, Health>()
  private timer?: NodeJS.Timeout
  private readonly now: () => number

  constructor(
    private readonly host: NodeLifecycleHost,
    private readonly opts: NodeLifecycleOptions,
  ) {
    this.now = opts.now ?? Date.now
  }

  start(): void {
    this.timer ??= setInterval(() => this.monitor(), this.opts.monitorPeriodMs).unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  /** One pass over every Node (what runs each monitor period). */
  monitor(): void {
    const now = this.now()
    const present = new Set<string>()
    for (const node of this.host.nodes()) {
      const name = node.metadata.name
      present.add(name)
      const heartbeat = conditionsOf(node).find((c) => c.type === 'Ready')?.lastHeartbeatTime
      const renewTime = (this.host.lease(name)?.spec as { renewTime?: string } | undefined)?.renewTime
      const seen = this.health.get(name)
      // a node seen for the first time gets a whole grace period, as the real controller gives it
      if (!seen || seen.heartbeat !== heartbeat || seen.renewTime !== renewTime)
        this.health.set(name, { heartbeat, renewTime, probeMs: now })
      const probeMs = this.health.get(name)?.probeMs ?? now
      let next = now - probeMs > this.opts.gracePeriodMs ? withUnknownConditions(node, now) : node
      next = withReadinessTaints(next, now)
      if (next !== node) this.host.store(next)
    }
    for (const name of this.health.keys()) if (!present.has(name)) this.health.delete(name)
  }
}

/** The node with every monitored condition Unknown; the same object when they all are already. */
function withUnknownConditions(node: KubeObject, nowMs: number): KubeObject {
  const conditions = conditionsOf(node)
  let changed = false
  const next = conditions.map((c) => {
    if (!MONITORED.includes(c.type ?? '') || c.status === 'Unknown') return c
    changed = true
    return {
      ...c,
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      lastTransitionTime: time(nowMs),
    }
  })
  for (const type of MONITORED) {
    if (conditions.some((c) => c.type === type)) continue
    changed = true
    next.push({
      type,
      status: 'Unknown',
      reason: 'NodeStatusNeverUpdated',
      message: 'Kubelet never posted node status.',
      lastHeartbeatTime: String(node.metadata.creationTimestamp ?? time(nowMs)),
      lastTransitionTime: time(nowMs),
    })
  }
  if (!changed) return node
  return { ...node, status: { ...(node.status as object), conditions: next } }
}

/** The node with the taints its Ready condition calls for; the same object when it has them. */
function withReadinessTaints(node: KubeObject, nowMs: number): KubeObject {
  const ready = conditionsOf(node).find((c) => c.type === 'Ready')?.status
  const wanted = ready === 'Unknown' ? UNREACHABLE : ready === 'False' ? NOT_READY : undefined
  const taints = taintsOf(node)
  const kept = taints.filter((t) => (t.key !== UNREACHABLE && t.key !== NOT_READY) || t.key === wanted)
  const missing = wanted
    ? ['NoSchedule', 'NoExecute']
        .filter((effect) => !kept.some((t) => t.key === wanted && t.effect === effect))
        .map((effect) => ({ key: wanted, effect, timeAdded: time(nowMs) }))
    : []
  if (missing.length === 0 && kept.length === taints.length) return node
  const next = [...kept, ...missing]
  const { taints: _old, ...spec } = (node.spec ?? {}) as { taints?: Taint[] }
  return { ...node, spec: next.length > 0 ? { ...spec, taints: next } : spec }
}
