/**
 * Nodes age as in a real cluster: the kubelet stand-in (simulator/kubelet-unit/kubelet, a TEST
 * DOUBLE) renews its node's Lease and posts its status, and the API contract fake's node lifecycle
 * controller marks a node without heartbeats Unknown after the grace period, as
 * kube-controller-manager's does. The controller alone runs on a clock of the test's; the whole
 * chain (kubeadm init starting kubelet.service through the simulator's systemctl, the stand-in, the
 * controller) runs as processes with a short grace and is read back with the real kubectl 1.35.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { runKubeadmInit } from '../../src/lib/bootstrapper/index.js'
import { kubeadmPaths } from '../../src/lib/bootstrapper/kubeadm/kubeadm-config.js'
import {
  NodeLifecycleController,
  type NodeLifecycleHost,
} from '../../src/lib/simulator/fake-apiserver-node-lifecycle.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { type KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { nodePaths } from '../../src/lib/paths.js'
import { silentLogger } from '../../src/lib/system/logger.js'
import { runProcess } from '../../src/lib/system/process.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { installFakeSystemd, type FakeSystemd } from '../support/fake-systemd.js'
import { realKubectl } from '../support/helm.js'
import { KUBEADM_FAKE } from '../support/kubeadm-fake.js'
import { spyingRunner } from '../support/runner.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

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

describe('a node whose kubelet stops goes NotReady, and Ready again once it is back (kubeadm fake, kubelet stand-in, API fake; real kubectl)', function () {
  this.timeout(120_000)
  /** Short, so that the test need not wait 40 s; the stand-in renews every quarter of it. */
  const GRACE = '4s'
  let tmp: TempDir
  let api: FakeApiServer
  let systemd: FakeSystemd | undefined
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => {
    await systemd?.stop()
    await api?.stop()
    await tmp.cleanup()
  })

  it('kubeadm init starts kubelet.service; its Lease and status keep the Node Ready; killed, the Node is NotReady (NodeStatusUnknown, unreachable taints); started again, Ready', async () => {
    const apiDir = path.join(tmp.dir, 'api')
    api = await new FakeApiServer({ dir: apiDir, nodeMonitorGracePeriodMs: 4_000 }).start()
    const admin = path.join(tmp.dir, 'admin.conf')
    await writeFile(admin, api.kubeconfig(), { mode: 0o600 })
    const root = path.join(tmp.dir, 'root')
    await mkdir(root)
    systemd = await installFakeSystemd({ dir: path.join(tmp.dir, 'systemd'), nodeConfig: '/unused', root })
    const env = {
      ...systemd.env,
      KUBEADM_FAKE_API_DIR: apiDir,
      KUBEADM_FAKE_ADMIN_KUBECONFIG: admin,
      CONSTELL_MINI_NODE_GRACE_PERIOD: GRACE,
    }
    await runKubeadmInit(
      {
        kubernetesVersion: 'v1.31.13',
        clusterName: 'constell',
        nodeName: 'cp-0',
        nodeIP: '10.0.0.2',
        controlPlaneEndpoint: '10.0.0.2',
        certSANs: [],
        serviceCIDR: '10.96.0.0/12',
        conformance: false,
        paths: kubeadmPaths(nodePaths(root)),
      },
      {
        runner: spyingRunner(() => {}, env),
        kubeadm: KUBEADM_FAKE,
        paths: nodePaths(root),
        recordOutput: () => {},
        log: silentLogger,
      },
    )
    expect(await readFile(path.join(root, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8')).to.include(
      '--hostname-override=cp-0',
    )
    const kubelet = await systemd.pid('kubelet.service')
    expect(kubelet, 'kubeadm started kubelet.service').to.be.a('number')

    const home = path.join(tmp.dir, 'home')
    await mkdir(home)
    const kubectl = async (...args: string[]) => {
      const r = await runProcess(await realKubectl(), ['--kubeconfig', admin, ...args], {
        env: { PATH: process.env.PATH, HOME: home },
        timeoutMs: 30_000,
      })
      expect(r.code, `kubectl ${args.join(' ')}: ${r.stderr}`).to.equal(0)
      return r.stdout
    }
    const lease = () => api.get('coordination.k8s.io/v1', 'leases', 'cp-0', 'kube-node-lease')
    const renewals = new Set<string>()
    await eventually(
      'the Lease renewed twice',
      async () => {
        renewals.add(String((lease()?.spec as { renewTime?: string } | undefined)?.renewTime))
        return renewals.size > 2 ? true : undefined
      },
      30_000,
    )
    expect(lease()?.spec).to.include({ holderIdentity: 'cp-0', leaseDurationSeconds: 4 })
    expect(await kubectl('get', 'nodes')).to.match(/^cp-0\s+Ready\s+control-plane\s/m)

    process.kill(kubelet!, 'SIGKILL') // the kubelet crashes, or its machine is gone
    await eventually(
      'the Node NotReady',
      async () => (/^cp-0\s+NotReady\s/m.test(await kubectl('get', 'nodes')) ? true : undefined),
      60_000,
    )
    const node = JSON.parse(await kubectl('get', 'node', 'cp-0', '-o', 'json')) as {
      spec: { taints?: Array<{ key: string; effect: string }> }
      status: { conditions: Condition[] }
    }
    expect(node.status.conditions.find((c) => c.type === 'Ready')).to.include({
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
    })
    expect(node.spec.taints?.map((t) => `${t.key}:${t.effect}`)).to.have.members([
      'node.kubernetes.io/unreachable:NoSchedule',
      'node.kubernetes.io/unreachable:NoExecute',
    ])

    // as a rebooted node's bootstrapper does
    const start = await runProcess('systemctl', ['start', 'kubelet.service'], {
      env: { ...process.env, ...env },
    })
    expect(start.code, start.stderr).to.equal(0)
    await eventually(
      'the Node Ready again',
      async () => (/^cp-0\s+Ready\s/m.test(await kubectl('get', 'nodes')) ? true : undefined),
      60_000,
    )
    await eventually(
      'the unreachable taints gone',
      async () =>
        (await kubectl('get', 'node', 'cp-0', '-o', 'jsonpath={.spec.taints}')).trim() === ''
          ? true
          : undefined,
      30_000,
    )
    expect(await systemd.journal('kubelet.service')).to.match(/kubelet \(SIMULATED\) for node cp-0/)
  })
})
