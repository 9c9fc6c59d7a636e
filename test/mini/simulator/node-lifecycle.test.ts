/**
 * Nodes age as in a real cluster: the API contract fake's node lifecycle controller marks a node
 * without heartbeats (status posts, Lease renewals) Unknown after the grace period, as
 * kube-controller-manager's does. The controller runs here on a clock of the test's.
 */
import {
  NodeLifecycleController,
  type NodeLifecycleHost,
} from '../../../src/lib/mini/simulator/fake-apiserver-node-lifecycle.js'
import type { KubeObject } from '../../../src/lib/mini/simulator/index.js'
import { expect } from '../../support/chai.js'

const GRACE_MS = 10_000
const T0 = Date.parse('2030-01-01T00:00:00Z')
const at = (ms: number) => new Date(T0 + ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

interface Condition {
  type: string
  status: string
  reason?: string
  message?: string
  lastHeartbeatTime?: string
}

const readyNode = (heartbeatMs: number, extra: { taints?: object[] } = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'worker-0', creationTimestamp: at(0) },
  spec: extra.taints ? { taints: extra.taints } : {},
  status: {
    conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({
      type,
      status: type === 'Ready' ? 'True' : 'False',
      reason: 'Kubelet',
      lastHeartbeatTime: at(heartbeatMs),
      lastTransitionTime: at(0),
    })),
  },
})

/** A host of one node and its lease, and a clock, both the test's. */
function controllerFor(node: KubeObject) {
  const state = { node, renewTime: undefined as string | undefined, nowMs: 0, writes: 0 }
  const host: NodeLifecycleHost = {
    nodes: () => [state.node],
    lease: () =>
      state.renewTime ? { metadata: { name: 'worker-0' }, spec: { renewTime: state.renewTime } } : undefined,
    store: (n) => {
      state.node = n
      state.writes++
    },
  }
  const controller = new NodeLifecycleController(host, {
    gracePeriodMs: GRACE_MS,
    monitorPeriodMs: 1_000,
    now: () => T0 + state.nowMs,
  })
  const conditions = () => (state.node.status as { conditions: Condition[] }).conditions
  const ready = () => conditions().find((c) => c.type === 'Ready')
  const taints = () =>
    ((state.node.spec as { taints?: Array<{ key: string; effect: string }> }).taints ?? []).map(
      (t) => `${t.key}:${t.effect}`,
    )
  /** Advances the clock to `ms` and runs one monitor pass. */
  const passAt = (ms: number) => {
    state.nowMs = ms
    controller.monitor()
  }
  return { state, passAt, conditions, ready, taints }
}

describe("the node lifecycle controller of the API contract fake (a clock of the test's)", () => {
  it('a node seen for the first time gets a whole grace period, however old its heartbeat', () => {
    const c = controllerFor(readyNode(-3_600_000))
    c.passAt(0)
    c.passAt(GRACE_MS)
    expect(c.ready()?.status).to.equal('True')
    expect(c.state.writes).to.equal(0)
  })

  it('no heartbeat for longer than the grace: every monitored condition Unknown, and the unreachable taints', () => {
    const c = controllerFor(readyNode(0, { taints: [{ key: 'dedicated', effect: 'NoSchedule' }] }))
    c.passAt(0)
    c.passAt(GRACE_MS + 1)
    expect(c.conditions().map((x) => [x.type, x.status, x.reason])).to.deep.equal([
      ['MemoryPressure', 'Unknown', 'NodeStatusUnknown'],
      ['DiskPressure', 'Unknown', 'NodeStatusUnknown'],
      ['PIDPressure', 'Unknown', 'NodeStatusUnknown'],
      ['Ready', 'Unknown', 'NodeStatusUnknown'],
    ])
    expect(c.ready()).to.include({
      message: 'Kubelet stopped posting node status.',
      lastHeartbeatTime: at(0),
    })
    expect(c.taints()).to.deep.equal([
      'dedicated:NoSchedule',
      'node.kubernetes.io/unreachable:NoSchedule',
      'node.kubernetes.io/unreachable:NoExecute',
    ])
    const writes = c.state.writes
    c.passAt(GRACE_MS * 3)
    expect(c.state.writes, 'nothing more to write').to.equal(writes)
  })

  const heartbeats: Record<string, (c: ReturnType<typeof controllerFor>, ms: number) => void> = {
    'a renewed Lease alone (the kubelet posts its status only on change)': (c, ms) =>
      (c.state.renewTime = `${at(ms).slice(0, -1)}.000000Z`),
    'a status post alone': (c, ms) => (c.state.node = readyNode(ms)),
  }
  for (const [name, beat] of Object.entries(heartbeats))
    it(`${name} keeps the node Ready`, () => {
      const c = controllerFor(readyNode(0))
      c.passAt(0)
      for (let ms = 5_000; ms <= 6 * GRACE_MS; ms += 5_000) {
        beat(c, ms)
        c.passAt(ms)
      }
      expect(c.ready()?.status).to.equal('True')
      expect(c.taints()).to.deep.equal([])
    })

  it('back: the kubelet posts Ready again and the unreachable taints go, other taints stay', () => {
    const c = controllerFor(readyNode(0, { taints: [{ key: 'dedicated', effect: 'NoSchedule' }] }))
    c.passAt(0)
    c.passAt(GRACE_MS + 1)
    c.state.node = { ...c.state.node, status: readyNode(GRACE_MS + 2).status }
    c.passAt(GRACE_MS + 3)
    expect(c.ready()?.status).to.equal('True')
    expect(c.taints()).to.deep.equal(['dedicated:NoSchedule'])
  })

  it('a kubelet that reports NotReady gets the not-ready taints at once; one that never posted a condition gets NodeStatusNeverUpdated', () => {
    const notReady = readyNode(0)
    ;(notReady.status as { conditions: Condition[] }).conditions[3]!.status = 'False'
    const c = controllerFor(notReady)
    c.passAt(0)
    expect(c.taints()).to.deep.equal([
      'node.kubernetes.io/not-ready:NoSchedule',
      'node.kubernetes.io/not-ready:NoExecute',
    ])
    const never = controllerFor({ ...readyNode(0), status: {} })
    never.passAt(0)
    never.passAt(GRACE_MS + 1)
    expect(never.conditions().map((x) => [x.type, x.status, x.reason])).to.deep.equal(
      ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'].map((t) => [
        t,
        'Unknown',
        'NodeStatusNeverUpdated',
      ]),
    )
    expect(never.ready()?.lastHeartbeatTime, "the node's creation").to.equal(at(0))
  })
})
