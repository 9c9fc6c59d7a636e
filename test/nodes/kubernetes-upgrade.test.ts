/**
 * `upgrade apply --kubernetes`'s flow against the Kubernetes API contract fake (FakeApiServer, a
 * TEST DOUBLE) with the real upgrade agent on every node, whose kubeadm step is replaced by a
 * recording double that moves the Node's kubelet (and kubeadm-config, for `apply`) to the target.
 * The orchestrator's clock lets every agent look at its Node between polls, so the order is exact.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { NodeUpgradeError } from '../../src/lib/bootstrapper/upgrade/node-upgrade.js'
import { UpgradeAgent } from '../../src/lib/bootstrapper/upgrade/upgrade-agent.js'
import { exitCodeOf, type CliError } from '../../src/lib/errors/index.js'
import { openKubeApi, openNodeAdmin, openNodeAnnotations } from '../../src/lib/kube/index.js'
import {
  planKubernetesUpgrade,
  readUpgradeRecord,
  renderKubernetesPlan,
  runKubernetesUpgrade,
  upgradeFailed,
  type KubernetesUpgradeApi,
  type KubernetesUpgradePlan,
} from '../../src/lib/nodes/index.js'
import {
  UPGRADE_REQUEST_ANNOTATION,
  UPGRADE_STATUS_ANNOTATION,
  parseStatus,
  type NodeUpgradeRequest,
} from '../../src/lib/nodeupgrade/index.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import type { KubeObject } from '../../src/lib/simulator/fake-apiserver.js'
import { silentLogger } from '../../src/lib/system/logger.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const CP = 'node-role.kubernetes.io/control-plane'
const FROM = 'v1.31.13'
const TO = 'v1.32.9'
const COMPONENTS = [
  {
    url: 'https://mirror/kubeadm',
    hash: `sha256:${'a'.repeat(64)}`,
    installPath: '/run/state/bin/kubeadm',
    extract: false,
  },
]

type NodeObject = KubeObject & {
  metadata: { annotations?: Record<string, string> }
  spec: { unschedulable?: boolean }
  status: { nodeInfo: { kubeletVersion: string }; conditions: Array<{ type: string; status: string }> }
}

const nodeObject = (
  name: string,
  opts: { controlPlane?: boolean; kubelet?: string; ready?: boolean } = {},
) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: opts.controlPlane ? { [CP]: '' } : ({} as Record<string, string>) },
  spec: {},
  status: {
    addresses: [{ type: 'InternalIP', address: '10.0.0.2' }],
    conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }],
    nodeInfo: { kubeletVersion: opts.kubelet ?? FROM },
  },
})

const kubeadmConfig = (version: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
  data: {
    ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: ${version}\n`,
  },
})

describe('Kubernetes upgrade, node by node (API contract fake, real upgrade agents)', function () {
  this.timeout(20_000)
  let server: FakeApiServer
  let kubeconfig: string
  let api: KubernetesUpgradeApi
  let cleanup: () => Promise<void>
  /** What happened, in order: the orchestrator's API writes and each agent's step. */
  let events: string[]
  let agents: UpgradeAgent[]
  /** How a node's step ends; by default it moves the node to the target. */
  let stepOutcome: (node: string, req: NodeUpgradeRequest) => Promise<void>
  /** Called on every orchestrator sleep: a test interrupts the run from here. */
  let onSleep: () => void

  const nodeOf = (name: string) => server.get('v1', 'nodes', name) as NodeObject
  const moveNode = (name: string, req: NodeUpgradeRequest) => {
    const n = nodeOf(name)
    server.put('v1', 'nodes', {
      ...n,
      status: { ...n.status, nodeInfo: { kubeletVersion: req.kubernetesVersion } },
    })
    if (req.step === 'apply') server.put('v1', 'configmaps', kubeadmConfig(req.kubernetesVersion))
  }
  const agentFor = (name: string) =>
    new UpgradeAgent({
      node: name,
      annotations: () => openNodeAnnotations(kubeconfig),
      upgrade: async (req) => {
        events.push(
          `${name}: ${req.step} ${req.kubernetesVersion} (cordoned: ${nodeOf(name).spec.unschedulable === true})`,
        )
        await stepOutcome(name, req)
        return { kubernetesVersion: req.kubernetesVersion, step: req.step, kubeadmOutput: '' }
      },
      log: silentLogger,
      clock: () => new Date('2026-11-27T12:00:00Z'),
      sleep: () => Promise.resolve(),
    })

  /** Every sleep of the orchestrator: each agent looks at its Node once; time moves on. */
  const clock = () => {
    let t = 0
    return {
      now: () => t,
      date: () => new Date(Date.UTC(2026, 10, 27, 12, 0, 0) + t),
      sleep: async (ms: number) => {
        onSleep()
        for (const agent of agents) await agent.checkOnce().catch(() => undefined)
        t += ms
      },
    }
  }

  const seed = (opts: { workers?: number; clusterVersion?: string } = {}) => {
    server.put('v1', 'configmaps', kubeadmConfig(opts.clusterVersion ?? FROM))
    const names = ['control-plane-0', ...Array.from({ length: opts.workers ?? 2 }, (_, i) => `worker-${i}`)]
    for (const name of names)
      server.put('v1', 'nodes', nodeObject(name, { controlPlane: name.startsWith('control') }))
    agents = names.map(agentFor)
  }
  const plan = (target = TO, components = COMPONENTS) =>
    planKubernetesUpgrade(target, {
      api,
      now: () => new Date('2026-11-27T12:00:00Z'),
      components: () => Promise.resolve({ components, source: 'the test' }),
    })
  const run = (
    p: KubernetesUpgradePlan,
    extra: { yes?: boolean; confirm?: (q: string) => Promise<boolean> } = {},
  ) =>
    runKubernetesUpgrade(
      p,
      { yes: extra.yes ?? true, drainTimeoutMs: 60_000, nodeTimeoutMs: 60_000 },
      { api, clock: clock(), confirm: extra.confirm, progress: () => undefined },
    )
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('resolved'),
      (e: unknown) => e as CliError,
    )
  const annotations = (name: string) => nodeOf(name).metadata.annotations ?? {}
  const untouched = () => {
    for (const n of server.list('v1', 'nodes') as NodeObject[]) {
      expect(n.metadata.annotations?.[UPGRADE_REQUEST_ANNOTATION], n.metadata.name).to.equal(undefined)
      expect(n.spec.unschedulable, n.metadata.name).to.not.equal(true)
    }
    expect(server.get('v1', 'configmaps', `constellation-components-${TO}`, 'kube-system')).to.equal(
      undefined,
    )
    expect(server.get('v1', 'configmaps', 'constellation-kubernetes-upgrade', 'kube-system')).to.equal(
      undefined,
    )
  }

  beforeEach(async () => {
    const tmp = await makeTempDir()
    cleanup = tmp.cleanup
    server = await new FakeApiServer().start()
    kubeconfig = path.join(tmp.dir, 'admin.conf')
    await writeFile(kubeconfig, server.kubeconfig(), { mode: 0o600 })
    const [admin, kube] = await Promise.all([openNodeAdmin(kubeconfig), openKubeApi(kubeconfig)])
    api = {
      ...admin,
      getConfigMap: (ns, name) => kube.getConfigMap(ns, name),
      applyConfigMap: async (ns, name, data) => {
        events.push(`write ConfigMap ${name}`)
        await kube.applyConfigMap(ns, name, data)
      },
    }
    events = []
    agents = []
    stepOutcome = async (name, req) => moveNode(name, req)
    onSleep = () => undefined
  })
  afterEach(async () => {
    await server.stop()
    await cleanup()
  })

  it('moves the first control plane with apply, then every other node with node, each cordoned, and records the components first', async () => {
    seed()
    const p = await plan()
    expect(p.nodes.map((n) => `${n.name} ${n.step} ${n.action}`)).to.deep.equal([
      'control-plane-0 apply upgrade',
      'worker-0 node upgrade',
      'worker-1 node upgrade',
    ])
    const report = await run(p)
    expect(
      events.filter((e) => !e.startsWith('write ConfigMap constellation-kubernetes-upgrade')),
    ).to.deep.equal([
      `write ConfigMap constellation-components-${TO}`,
      `control-plane-0: apply ${TO} (cordoned: true)`,
      `worker-0: node ${TO} (cordoned: true)`,
      `worker-1: node ${TO} (cordoned: true)`,
    ])
    expect(report.nodes.map((n) => n.outcome)).to.deep.equal(['upgraded', 'upgraded', 'upgraded'])
    for (const name of ['control-plane-0', 'worker-0', 'worker-1']) {
      expect(nodeOf(name).spec.unschedulable, name).to.equal(false)
      expect(parseStatus(annotations(name)[UPGRADE_STATUS_ANNOTATION])?.id).to.equal(`${p.id}/${name}/1`)
    }
    const record = await readUpgradeRecord(api)
    expect(record).to.include({ id: p.id, from: FROM, target: TO, state: 'succeeded' })
    expect(Object.keys(record!.nodes)).to.deep.equal(['control-plane-0', 'worker-0', 'worker-1'])
    const components = server.get('v1', 'configmaps', `constellation-components-${TO}`, 'kube-system')
    const data = (components?.data ?? {}) as Record<string, string>
    expect(JSON.parse(data.components ?? '')).to.have.length(1)
    // run again: every node is at the target, nothing is asked of any agent
    events = []
    const again = await plan()
    expect(again.nodes.every((n) => n.action === 'done')).to.equal(true)
    expect(renderKubernetesPlan(again)).to.contain(`Every node is at ${TO}: nothing to do.`)
    expect((await run(again)).nodes.map((n) => n.outcome)).to.deep.equal(Array(3).fill('already at target'))
    expect(events).to.deep.equal([])
  })

  const refusals: Record<
    string,
    { setup: () => void; target?: string; components?: typeof COMPONENTS; want: RegExp }
  > = {
    'a skipped minor': {
      setup: () => seed({ clusterVersion: 'v1.30.14' }),
      want: /skips 1 minor version\(s\).*go to v1\.31 first/,
    },
    'a downgrade': { setup: () => seed({ clusterVersion: TO }), target: 'v1.31.13', want: /a downgrade/ },
    'an unsupported patch': {
      setup: () => seed(),
      target: 'v1.32.1',
      want: /supported patch of v1\.32 is v1\.32\.9/,
    },
    'a node that is not Ready': {
      setup: () => {
        seed()
        server.put('v1', 'nodes', nodeObject('worker-1', { ready: false }))
      },
      want: /worker-1 is not Ready/,
    },
    'a component not pinned by sha256': {
      setup: () => seed(),
      components: [{ ...COMPONENTS[0]!, hash: 'md5:abc' }],
      want: /the test: component 0 \(\/run\/state\/bin\/kubeadm\): hash "md5:abc" is not sha256/,
    },
  }
  for (const [name, c] of Object.entries(refusals))
    it(`refuses ${name} and changes nothing`, async () => {
      c.setup()
      const err = await failure(plan(c.target, c.components))
      expect(err.message).to.match(c.want)
      untouched()
    })

  it('refuses an unfinished upgrade to another version until it is finished', async () => {
    seed()
    stepOutcome = () =>
      Promise.reject(new NodeUpgradeError('kubeadm', 'kubeadm upgrade apply failed: etcd is down', true))
    await run(await plan())
    const err = await failure(plan('v1.31.13'))
    expect(err.message).to.match(
      /an upgrade to v1\.32\.9 \(v1\.32\.9-20261127t120000z\) is unfinished \(failed: control-plane-0: kubeadm upgrade apply failed: etcd is down\)/,
    )
    expect(exitCodeOf(err)).to.equal(2)
  })

  it('stops at a node whose step fails: it stays cordoned with the reason, no node after it is asked, nothing is marked done', async () => {
    seed()
    stepOutcome = async (name, req) => {
      if (name === 'worker-0')
        throw new NodeUpgradeError('kubelet', 'restarting kubelet.service failed', true, 'out')
      moveNode(name, req)
    }
    const p = await plan()
    const report = await run(p)
    expect(report.nodes.map((n) => n.outcome)).to.deep.equal(['upgraded', 'failed', 'not reached'])
    expect(report.failure).to.deep.include({ node: 'worker-0', phase: 'kubelet', cordoned: true })
    expect(nodeOf('worker-0').spec.unschedulable).to.equal(true)
    expect(annotations('worker-1')[UPGRADE_REQUEST_ANNOTATION]).to.equal(undefined)
    const record = await readUpgradeRecord(api)
    expect(record?.state).to.equal('failed')
    expect(record?.failure).to.deep.equal({
      node: 'worker-0',
      phase: 'kubelet',
      message: 'restarting kubelet.service failed',
    })
    expect(record?.nodes['worker-0']).to.include({ state: 'failed', nodeChanged: true })
    const err = upgradeFailed(report)!
    expect(err.message).to.equal(
      `upgrading worker-0 to ${TO} failed (kubelet): restarting kubelet.service failed`,
    )
    expect(err.hint).to.match(/worker-0 stays cordoned/)
    expect(exitCodeOf(err)).to.equal(1)

    // fixed: the same command resumes with the same id, worker-0 asked again (attempt 2), cp-0 not redone
    stepOutcome = async (name, req) => moveNode(name, req)
    events = []
    const resumed = await plan()
    expect(resumed.id).to.equal(p.id)
    expect(resumed.nodes.map((n) => n.action)).to.deep.equal(['done', 'upgrade', 'upgrade'])
    const done = await run(resumed)
    expect(done.resumed).to.equal(true)
    expect(events.filter((e) => !e.startsWith('write'))).to.deep.equal([
      `worker-0: node ${TO} (cordoned: true)`,
      `worker-1: node ${TO} (cordoned: true)`,
    ])
    expect(parseStatus(annotations('worker-0')[UPGRADE_STATUS_ANNOTATION])?.id).to.equal(`${p.id}/worker-0/2`)
    expect((await readUpgradeRecord(api))?.state).to.equal('succeeded')
    expect((await readUpgradeRecord(api))?.failure).to.equal(undefined)
  })

  it('uncordons a node whose step failed before anything on it changed (a bad hash)', async () => {
    seed()
    stepOutcome = () =>
      Promise.reject(
        new NodeUpgradeError('download', 'sha256 mismatch; nothing on the node was changed', false),
      )
    const report = await run(await plan())
    expect(report.failure).to.deep.include({ node: 'control-plane-0', phase: 'download', cordoned: false })
    expect(nodeOf('control-plane-0').spec.unschedulable).to.equal(false)
    expect(upgradeFailed(report)!.hint).to.match(
      /nothing on control-plane-0 changed and it is schedulable again/,
    )
    expect(annotations('worker-0')[UPGRADE_REQUEST_ANNOTATION]).to.equal(undefined)
  })

  it('resumes an interrupted run: a step in flight is waited for, not sent again; a finished node is not redone', async () => {
    seed()
    const p = await plan()
    // interrupted once worker-0 has its request and before its agent looked
    onSleep = () => {
      if (annotations('worker-0')[UPGRADE_REQUEST_ANNOTATION]) throw new Error('interrupted (SIGINT)')
    }
    await failure(run(p))
    expect(events.filter((e) => !e.startsWith('write'))).to.deep.equal([
      `control-plane-0: apply ${TO} (cordoned: true)`,
    ])
    expect((await readUpgradeRecord(api))?.state).to.equal('running')
    onSleep = () => undefined
    events = []
    const resumed = await plan()
    expect(resumed.id).to.equal(p.id)
    expect(resumed.nodes.map((n) => n.action)).to.deep.equal(['done', 'upgrade', 'upgrade'])
    await run(resumed)
    expect(events.filter((e) => !e.startsWith('write'))).to.deep.equal([
      `worker-0: node ${TO} (cordoned: true)`,
      `worker-1: node ${TO} (cordoned: true)`,
    ])
    expect(parseStatus(annotations('worker-0')[UPGRADE_STATUS_ANNOTATION])?.id).to.equal(`${p.id}/worker-0/1`)
  })

  it('uncordons a node an interrupted run left cordoned after its step finished', async () => {
    seed({ workers: 1 })
    const p = await plan()
    // interrupted right after worker-0's step, before the run uncordoned it
    const uncordon = api.uncordon
    api.uncordon = (name) =>
      name === 'worker-0' ? Promise.reject(new Error('interrupted (SIGINT)')) : uncordon(name)
    await failure(run(p))
    expect(nodeOf('worker-0').spec.unschedulable).to.equal(true)
    api.uncordon = uncordon
    const resumed = await plan()
    expect(resumed.nodes.map((n) => n.action)).to.deep.equal(['done', 'uncordon'])
    expect(renderKubernetesPlan(resumed)).to.match(
      /worker-0 .* uncordon \(at v1\.32\.9; left cordoned by an interrupted run\)/,
    )
    events = []
    const report = await run(resumed)
    expect(nodeOf('worker-0').spec.unschedulable).to.equal(false)
    expect(report.nodes.map((n) => n.outcome)).to.deep.equal(['already at target', 'upgraded'])
    expect(events.filter((e) => !e.startsWith('write'))).to.deep.equal([])
  })

  it('asks first: without a terminal and without --yes it refuses (exit 2); declined, nothing changes', async () => {
    seed()
    const err = await failure(run(await plan(), { yes: false }))
    expect(exitCodeOf(err)).to.equal(2)
    expect(err.message).to.match(/without confirmation: this is not an interactive terminal/)
    untouched()
    const questions: string[] = []
    const report = await run(await plan(), {
      yes: false,
      confirm: async (q) => (questions.push(q), false),
    })
    expect(report.declined).to.equal(true)
    expect(questions).to.deep.equal([`Upgrade the cluster's Kubernetes to ${TO}, node by node?`])
    untouched()
  })

  it('names the agent that never answers, and leaves its node cordoned', async () => {
    seed({ workers: 0 })
    agents = []
    const report = await run(await plan())
    expect(report.failure?.message).to.match(
      /its upgrade agent did not finish request .*\/control-plane-0\/1 within \S+ \(it never picked it up: is constellation-upgrade-agent.service running on it\?\)/,
    )
    expect(nodeOf('control-plane-0').spec.unschedulable).to.equal(true)
  })
})
