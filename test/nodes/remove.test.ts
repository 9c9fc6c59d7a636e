/**
 * `node remove`'s flow against the Kubernetes API contract fake (FakeApiServer, a TEST DOUBLE):
 * cordon, drain through the eviction subresource (PodDisruptionBudgets honoured), the etcd quorum
 * rule with mini's SIMULATED etcd, and the objects that let a retired disk come back.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { exitCodeOf } from '../../src/lib/errors/index.js'
import {
  BOOTSTRAP_TOKEN_NODE_LABEL,
  openNodeAdmin,
  tokenNodeLabelValue,
  type NodeAdmin,
} from '../../src/lib/kube/index.js'
import { SIMULATED_ETCD_REMOVED, simulatedEtcd } from '../../src/lib/mini/etcd.js'
import { planNodeRemoval, removeNode, type RemovalDeps } from '../../src/lib/nodes/remove.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import type { KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const CP = 'node-role.kubernetes.io/control-plane'

const node = (name: string, address: string, controlPlane = false): KubeObject => ({
  metadata: { name, labels: controlPlane ? { [CP]: '' } : {} },
  spec: {},
  status: { addresses: [{ type: 'InternalIP', address }] },
})

const pod = (
  name: string,
  nodeName: string,
  opts: { owner?: string; labels?: Record<string, string>; mirror?: boolean; ready?: boolean } = {},
): KubeObject => ({
  metadata: {
    name,
    namespace: 'apps',
    labels: opts.labels ?? {},
    ...(opts.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'x' } } : {}),
    ...(opts.owner
      ? {
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: opts.owner, name: 'o', uid: 'u', controller: true },
          ],
        }
      : {}),
  },
  spec: { nodeName },
  status: {
    phase: 'Running',
    conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }],
  },
})

const diskRecord = (uuid: string, nodeName: string): KubeObject => ({
  metadata: {
    name: `constellation-state-disk-${uuid}`,
    namespace: 'kube-system',
    labels: { 'constellation.io/state-disk': 'true' },
  },
  data: {
    node: nodeName,
    role: 'worker',
    address: '10.0.0.3',
    tpm: 'aa',
    recordedAt: '2026-01-01T00:00:00Z',
  },
})

const token = (id: string, nodeName: string): KubeObject => ({
  metadata: {
    name: `bootstrap-token-${id}`,
    namespace: 'kube-system',
    labels: { [BOOTSTRAP_TOKEN_NODE_LABEL]: tokenNodeLabelValue(nodeName) },
  },
  type: 'bootstrap.kubernetes.io/token',
  data: { 'token-id': Buffer.from(id).toString('base64') },
})

const budget = (name: string, spec: Record<string, unknown>): KubeObject => ({
  metadata: { name, namespace: 'apps' },
  spec,
})

/** A clock whose sleep moves time on at once: bounded waits end without waiting. */
const fakeClock = () => {
  let t = 0
  return { now: () => t, sleep: async (ms: number) => void (t += ms) }
}

describe('node remove (against the Kubernetes API contract fake, a test double)', function () {
  this.timeout(20_000)
  let server: FakeApiServer
  let api: NodeAdmin
  let cleanup: () => Promise<void>
  let lines: string[]
  beforeEach(async () => {
    const tmp = await makeTempDir()
    cleanup = tmp.cleanup
    server = await new FakeApiServer().start()
    const kubeconfig = path.join(tmp.dir, 'admin.conf')
    await writeFile(kubeconfig, server.kubeconfig())
    api = await openNodeAdmin(kubeconfig)
    lines = []
  })
  afterEach(async () => {
    await server.stop()
    await cleanup()
  })

  const deps = (extra: Partial<RemovalDeps> = {}): RemovalDeps => ({
    api,
    etcd: simulatedEtcd(api),
    clock: fakeClock(),
    progress: (line) => lines.push(line),
    ...extra,
  })
  const seedWorkers = () => {
    server.put('v1', 'nodes', node('control-plane-0', '10.0.0.2', true))
    server.put('v1', 'nodes', node('worker-0', '10.0.0.3'))
    server.put('v1', 'nodes', node('worker-1', '10.0.0.4'))
  }
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('resolved'),
      (e: unknown) => e as Error,
    )
  const pods = () => server.list('v1', 'pods', 'apps').map((p) => p.metadata.name)

  it('drains a worker (DaemonSet and static pods stay), then deletes its Node, disk records and tokens, and only its', async () => {
    seedWorkers()
    server.put('v1', 'pods', pod('web-1', 'worker-1', { owner: 'ReplicaSet' }))
    server.put('v1', 'pods', pod('bare', 'worker-1'))
    server.put('v1', 'pods', pod('agent', 'worker-1', { owner: 'DaemonSet' }))
    server.put('v1', 'pods', pod('static', 'worker-1', { mirror: true }))
    server.put('v1', 'pods', pod('web-0', 'worker-0', { owner: 'ReplicaSet' }))
    server.put('v1', 'configmaps', diskRecord('1111', 'worker-1'))
    server.put('v1', 'configmaps', diskRecord('0000', 'worker-0'))
    server.put('v1', 'secrets', token('aaaaaa', 'worker-1'))
    server.put('v1', 'secrets', token('bbbbbb', 'worker-0'))

    const plan = await planNodeRemoval('worker-1', deps())
    expect(plan).to.deep.include({ role: 'worker', nodeExists: true })
    expect(plan.etcd).to.equal(undefined)
    expect(plan.pods.map((p) => `${p.action} ${p.pod}`)).to.have.members([
      'evict apps/web-1',
      'evict apps/bare',
      'keep apps/agent',
      'keep apps/static',
    ])
    const report = await removeNode(plan, { yes: true, drainTimeoutMs: 60_000 }, deps())

    expect(report.evicted).to.have.members(['apps/web-1', 'apps/bare'])
    expect(pods()).to.have.members(['agent', 'static', 'web-0'])
    expect(server.get('v1', 'nodes', 'worker-1')).to.equal(undefined)
    expect(server.get('v1', 'nodes', 'worker-0')).not.to.equal(undefined)
    expect(report.diskRecordsDeleted).to.deep.equal(['constellation-state-disk-1111'])
    expect(server.get('v1', 'configmaps', 'constellation-state-disk-0000', 'kube-system')).not.to.equal(
      undefined,
    )
    expect(report.bootstrapTokensDeleted).to.deep.equal(['bootstrap-token-aaaaaa'])
    expect(server.get('v1', 'secrets', 'bootstrap-token-bbbbbb', 'kube-system')).not.to.equal(undefined)
    // cordoned before the first eviction, through the eviction subresource
    const paths = server.requests.map((r) => `${r.method} ${r.path}`)
    const cordon = paths.indexOf('PATCH /api/v1/nodes/worker-1')
    const firstEviction = paths.findIndex((p) => p.endsWith('/eviction'))
    expect(cordon).to.be.greaterThan(-1)
    expect(firstEviction).to.be.greaterThan(cordon)
  })

  it('honours a PodDisruptionBudget: a blocked eviction is retried until the bound, the node stays cordoned and nothing else changes', async () => {
    seedWorkers()
    server.put('v1', 'pods', pod('db-0', 'worker-1', { owner: 'StatefulSet', labels: { app: 'db' } }))
    server.put(
      'policy/v1',
      'poddisruptionbudgets',
      budget('db', { minAvailable: 1, selector: { matchLabels: { app: 'db' } } }),
    )
    server.put('v1', 'configmaps', diskRecord('1111', 'worker-1'))

    const plan = await planNodeRemoval('worker-1', deps())
    const err = await failure(removeNode(plan, { yes: true, drainTimeoutMs: 20_000 }, deps()))

    expect(err.message).to.equal(
      "draining worker-1: still on it after 20s: apps/db-0 (Cannot evict pod as it would violate the pod's disruption budget.)",
    )
    expect(exitCodeOf(err)).to.equal(1)
    const evictions = server.requests.filter((r) => r.path.endsWith('/pods/db-0/eviction'))
    expect(evictions.length).to.equal(5) // at 0, 5, 10, 15 and 20 s
    expect(
      (server.get('v1', 'nodes', 'worker-1')?.spec as { unschedulable?: boolean }).unschedulable,
    ).to.equal(true)
    expect(pods()).to.deep.equal(['db-0'])
    expect(server.get('v1', 'configmaps', 'constellation-state-disk-1111', 'kube-system')).not.to.equal(
      undefined,
    )
  })

  it('evicts a pod whose budget allows a disruption (2 ready, minAvailable 1)', async () => {
    seedWorkers()
    server.put('v1', 'pods', pod('db-0', 'worker-0', { owner: 'StatefulSet', labels: { app: 'db' } }))
    server.put('v1', 'pods', pod('db-1', 'worker-1', { owner: 'StatefulSet', labels: { app: 'db' } }))
    server.put(
      'policy/v1',
      'poddisruptionbudgets',
      budget('db', { minAvailable: 1, selector: { matchLabels: { app: 'db' } } }),
    )
    const report = await removeNode(
      await planNodeRemoval('worker-1', deps()),
      { yes: true, drainTimeoutMs: 60_000 },
      deps(),
    )
    expect(report.evicted).to.deep.equal(['apps/db-1'])
    expect(pods()).to.deep.equal(['db-0'])
  })

  it('refuses without --yes when nobody can be asked (exit 2), and changes nothing; a "no" changes nothing either', async () => {
    seedWorkers()
    const plan = await planNodeRemoval('worker-1', deps())
    const err = await failure(removeNode(plan, { yes: false, drainTimeoutMs: 60_000 }, deps()))
    expect(err.message).to.equal(
      'refusing to remove worker-1 without confirmation: this is not an interactive terminal',
    )
    expect(exitCodeOf(err)).to.equal(2)
    const declined = await removeNode(
      plan,
      { yes: false, drainTimeoutMs: 60_000 },
      deps({ confirm: async () => false }),
    )
    expect(declined.declined).to.equal(true)
    expect(server.requests.filter((r) => r.method !== 'GET')).to.deep.equal([])
  })

  it("removes a control plane's etcd member first when 2 of 3 remain", async () => {
    server.put('v1', 'nodes', node('control-plane-0', '10.0.0.2', true))
    server.put('v1', 'nodes', node('control-plane-1', '10.0.0.3', true))
    server.put('v1', 'nodes', node('control-plane-2', '10.0.0.4', true))
    const plan = await planNodeRemoval('control-plane-2', deps())
    expect(plan.etcd?.member).to.include({ name: 'control-plane-2' })
    expect(plan.etcd?.member.peerURLs).to.deep.equal(['https://10.0.0.4:2380'])
    expect(plan.etcd?.membersAfter).to.equal(2)
    const report = await removeNode(plan, { yes: true, drainTimeoutMs: 60_000 }, deps())
    expect(report.etcdMemberRemoved).to.equal(plan.etcd?.member.id)
    expect(server.get('v1', 'nodes', 'control-plane-2')).to.equal(undefined)
    expect((await simulatedEtcd(api).members()).map((m) => m.name)).to.deep.equal([
      'control-plane-0',
      'control-plane-1',
    ])
  })

  const refusals: Record<string, { controlPlanes: number; etcd: boolean; want: string }> = {
    'one of 2 members': {
      controlPlanes: 2,
      etcd: true,
      want: "refusing to remove control-plane-1: it is one of 2 etcd members (the mini cluster's SIMULATED etcd (one member per control-plane Node)); etcd's quorum of 2 needs both to commit the removal, and the one member left would survive no failure",
    },
    'the last control plane': {
      controlPlanes: 1,
      etcd: true,
      want: "refusing to remove control-plane-0: it is the cluster's last control plane",
    },
    'a control plane where no etcd can be reached': {
      controlPlanes: 3,
      etcd: false,
      want: "refusing to remove control plane control-plane-2: its etcd member must be removed too, and this build reaches etcd only in a mini cluster's simulator",
    },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses to remove ${name}, changing nothing`, async () => {
      for (let i = 0; i < tc.controlPlanes; i++)
        server.put('v1', 'nodes', node(`control-plane-${i}`, `10.0.0.${i + 2}`, true))
      const target = `control-plane-${tc.controlPlanes - 1}`
      const err = await failure(planNodeRemoval(target, tc.etcd ? deps() : deps({ etcd: undefined })))
      expect(err.message).to.equal(tc.want)
      expect(server.requests.filter((r) => r.method !== 'GET')).to.deep.equal([])
    })

  it('finishes an interrupted removal: the Node and its etcd member gone, its records left', async () => {
    server.put('v1', 'nodes', node('control-plane-0', '10.0.0.2', true))
    server.put('v1', 'configmaps', diskRecord('1111', 'worker-1'))
    const plan = await planNodeRemoval('worker-1', deps())
    expect(plan).to.deep.include({ nodeExists: false, diskRecords: ['constellation-state-disk-1111'] })
    const report = await removeNode(plan, { yes: true, drainTimeoutMs: 60_000 }, deps())
    expect(report).to.deep.include({ cordoned: false, nodeDeleted: false })
    expect(report.diskRecordsDeleted).to.deep.equal(['constellation-state-disk-1111'])
  })

  it('says so when the cluster has no such node and no record of it', async () => {
    seedWorkers()
    const err = await failure(planNodeRemoval('worker-9', deps()))
    expect(err.message).to.match(
      /^the cluster at https:\/\/127\.0\.0\.1:\d+ has no Node "worker-9" and no disk record of it$/,
    )
  })

  it('simulated etcd: a member marked removed is no member, before its Node goes', async () => {
    server.put('v1', 'nodes', node('control-plane-0', '10.0.0.2', true))
    server.put('v1', 'nodes', node('control-plane-1', '10.0.0.3', true))
    const etcd = simulatedEtcd(api)
    const [, second] = await etcd.members()
    await etcd.remove(second!)
    expect(server.get('v1', 'nodes', 'control-plane-1')?.metadata.annotations).to.have.property(
      SIMULATED_ETCD_REMOVED,
    )
    expect((await etcd.members()).map((m) => m.name)).to.deep.equal(['control-plane-0'])
  })
})
