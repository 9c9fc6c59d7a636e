/**
 * The upgrade agent against the API fake through the node's own client (node:https, merge patches
 * on its Node): a request annotation runs the step once and the outcome is written back; a failure
 * is reported with its phase and kubeadm's words; a step left `running` is run again; a malformed
 * request is answered, not run.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { NodeUpgradeError } from '../../../src/lib/bootstrapper/upgrade/node-upgrade.js'
import { UpgradeAgent } from '../../../src/lib/bootstrapper/upgrade/upgrade-agent.js'
import {
  UPGRADE_REQUEST_ANNOTATION,
  UPGRADE_STATUS_ANNOTATION,
  type AgentStatus,
  type NodeUpgradeRequest,
} from '../../../src/lib/nodeupgrade/index.js'
import { openNodeAnnotations } from '../../../src/lib/kube/index.js'
import { FakeApiServer } from '../../../src/lib/simulator/index.js'
import { silentLogger } from '../../../src/lib/system/logger.js'
import { expect } from '../../support/chai.js'
import { makeTempDir, type TempDir } from '../../support/temp.js'

const COMPONENT = {
  url: 'https://x/kubeadm',
  hash: `sha256:${'a'.repeat(64)}`,
  installPath: '/run/state/bin/kubeadm',
  extract: false,
}
const request = (id: string) =>
  JSON.stringify({ id, kubernetesVersion: 'v1.32.9', step: 'node', components: [COMPONENT] })

describe('upgrade agent (its Node object in the API fake)', function () {
  this.timeout(20_000)
  let tmp: TempDir
  let api: FakeApiServer
  let kubeconfig: string
  let calls: NodeUpgradeRequest[]
  let outcome: () => Promise<void>

  const annotate = (annotations: Record<string, string>) =>
    api.put('v1', 'nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'w-0', annotations },
    })
  const status = () => {
    const node = api.get('v1', 'nodes', 'w-0') as { metadata: { annotations?: Record<string, string> } }
    const raw = node.metadata.annotations?.[UPGRADE_STATUS_ANNOTATION]
    return raw === undefined ? undefined : (JSON.parse(raw) as AgentStatus)
  }
  const agent = (node = 'w-0') =>
    new UpgradeAgent({
      node,
      annotations: () => openNodeAnnotations(kubeconfig),
      upgrade: async (req) => {
        calls.push(req)
        await outcome()
        return { kubernetesVersion: req.kubernetesVersion, step: req.step, kubeadmOutput: '[upgrade] done\n' }
      },
      log: silentLogger,
      clock: () => new Date('2026-11-27T12:00:00Z'),
      sleep: (ms, signal) =>
        new Promise((resolve) => {
          const t = setTimeout(resolve, ms)
          signal?.addEventListener('abort', () => (clearTimeout(t), resolve(undefined)))
        }),
      pollIntervalMs: 20,
    })

  beforeEach(async () => {
    tmp = await makeTempDir()
    api = await new FakeApiServer().start()
    kubeconfig = path.join(tmp.dir, 'kubelet.conf')
    await writeFile(kubeconfig, api.kubeconfig(), { mode: 0o600 })
    calls = []
    outcome = () => Promise.resolve()
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  it('does nothing without a request', async () => {
    annotate({})
    expect(await agent().checkOnce()).to.equal(undefined)
    expect(calls).to.deep.equal([])
    expect(status()).to.equal(undefined)
  })

  it('runs a request once and writes its outcome to the Node', async () => {
    annotate({ [UPGRADE_REQUEST_ANNOTATION]: request('u-1') })
    const a = agent()
    await a.checkOnce()
    expect(calls).to.have.length(1)
    expect(calls[0]).to.deep.include({ kubernetesVersion: 'v1.32.9', step: 'node' })
    expect(status()).to.deep.equal({
      id: 'u-1',
      state: 'succeeded',
      kubernetesVersion: 'v1.32.9',
      step: 'node',
      kubeadmOutput: '[upgrade] done\n',
      updatedAt: '2026-11-27T12:00:00.000Z',
    })
    expect(await a.checkOnce(), 'done: not again').to.equal(undefined)
    expect(calls).to.have.length(1)
  })

  it("reports a failed step with its phase and kubeadm's words, and does not retry it by itself", async () => {
    annotate({ [UPGRADE_REQUEST_ANNOTATION]: request('u-2') })
    outcome = () =>
      Promise.reject(
        new NodeUpgradeError('kubeadm', 'kubeadm upgrade node failed: exit 1', true, '[upgrade] FATAL: x'),
      )
    const a = agent()
    await a.checkOnce()
    expect(status()).to.include({
      id: 'u-2',
      state: 'failed',
      phase: 'kubeadm',
      nodeChanged: true,
      kubeadmOutput: '[upgrade] FATAL: x',
    })
    expect(status()?.message).to.include('kubeadm upgrade node failed: exit 1')
    await a.checkOnce()
    expect(calls).to.have.length(1)
  })

  it('runs again a step its status left running (the agent or the node stopped in the middle)', async () => {
    annotate({
      [UPGRADE_REQUEST_ANNOTATION]: request('u-3'),
      [UPGRADE_STATUS_ANNOTATION]: JSON.stringify({
        id: 'u-3',
        state: 'running',
        kubernetesVersion: 'v1.32.9',
        step: 'node',
        updatedAt: '',
      }),
    })
    await agent().checkOnce()
    expect(calls).to.have.length(1)
    expect(status()?.state).to.equal('succeeded')
  })

  it('answers a malformed request without running it', async () => {
    annotate({
      [UPGRADE_REQUEST_ANNOTATION]: JSON.stringify({
        id: 'u-4',
        kubernetesVersion: 'v1.32.9',
        step: 'sideways',
        components: [],
      }),
    })
    await agent().checkOnce()
    expect(calls).to.deep.equal([])
    expect(status()).to.include({ id: 'u-4', state: 'failed', phase: 'request', nodeChanged: false })
    expect(status()?.message).to.match(/step: want one of apply, node/)
  })

  it('says so when its Node is not registered yet', async () => {
    await expect(agent('nobody').checkOnce()).to.be.rejectedWith(/Node nobody is not registered/)
  })

  it('as a daemon: picks up a request while it runs, and stops', async () => {
    annotate({})
    const a = agent()
    await a.start()
    annotate({ [UPGRADE_REQUEST_ANNOTATION]: request('u-5') })
    for (let i = 0; i < 100 && status()?.state !== 'succeeded'; i++)
      await new Promise((r) => setTimeout(r, 20))
    expect(status()).to.include({ id: 'u-5', state: 'succeeded' })
    await a.stop()
    await a.done
  })
})
