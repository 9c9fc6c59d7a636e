/**
 * `constellation status` (built CLI) against real verification services on swtpm (each on a
 * loopback address of its own, at Constellation's port 30081), the Kubernetes API contract fake
 * (TEST DOUBLE) listing the Nodes, and the real helm 4 listing the releases it installed there.
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import { realHelmEnv } from '../support/helm.js'
import { ownLoopback } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { installFixtureReleases } from '../support/upgrade-workspace.js'
import { startVerifyServiceOn, type VerifyServiceProcess } from '../verify/verify-service-process.js'
import { Helm } from '../../src/lib/helm/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { extendPcr } from '../../src/lib/tpm/index.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest()

interface NodeSpec {
  name: string
  address: string
  controlPlane?: boolean
  ready?: boolean
}

describe('constellation status (built CLI; swtpm verification services, API fake, real helm 4)', function () {
  this.timeout(120_000)
  const clusterId = randomBytes(32)
  let ws: TempDir
  let api: FakeApiServer
  let tpms: SwtpmHandle[]
  let services: VerifyServiceProcess[]

  /** A node that attests: its own swtpm and verification service; PCR 15 holds `id` (this cluster's by default). */
  const startNode = async (id: Buffer | undefined = clusterId): Promise<string> => {
    const tpm = await startSwtpm()
    tpms.push(tpm)
    if (id) await extendPcr(tpm.open, 15, sha256(id))
    let address = ''
    services.push(await startVerifyServiceOn(tpm, ws.dir, async () => `${(address = ownLoopback())}:30081`))
    return address
  }
  const putNodes = (nodes: NodeSpec[]) => {
    for (const n of nodes)
      api.put('v1', 'nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name: n.name,
          labels: n.controlPlane ? { 'node-role.kubernetes.io/control-plane': '' } : {},
        },
        status: {
          addresses: [{ type: 'InternalIP', address: n.address }],
          conditions: [
            n.ready === false
              ? // as the node lifecycle controller leaves a node whose kubelet went silent
                {
                  type: 'Ready',
                  status: 'Unknown',
                  reason: 'NodeStatusUnknown',
                  message: 'Kubelet stopped posting node status.',
                }
              : { type: 'Ready', status: 'True' },
          ],
          nodeInfo: { kubeletVersion: 'v1.31.13' },
        },
      })
  }
  const status = (env: NodeJS.ProcessEnv = {}, ...extra: string[]) =>
    runCli(['status', '-C', ws.dir, '--timeout', '10s', ...extra], { env })

  beforeEach(async () => {
    ;[ws, api] = await Promise.all([makeTempDir('constell-status-'), startFakeApiServer()])
    tpms = []
    services = []
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir, '--endpoint', '127.0.0.1:9000'])
    expect(gen.code, gen.stderr).to.equal(0)
    const stateFile = path.join(ws.dir, 'constellation-state.yaml')
    const state = await readFile(stateFile, 'utf8')
    await writeFile(stateFile, state.replace(/clusterID: .*/, `clusterID: ${clusterId.toString('hex')}`))
    await writeFile(path.join(ws.dir, 'constellation-admin.conf'), api.kubeconfig(), { mode: 0o600 })
  })
  afterEach(async () => {
    await Promise.all(services.map((s) => s.stop()))
    await Promise.all(tpms.map((t) => t.stop()))
    await api.stop()
    await ws.cleanup()
  })

  it('a healthy cluster: every node trusted, of this cluster and Ready; the releases helm installed', async () => {
    const cp = await startNode()
    const worker = await startNode()
    putNodes([
      { name: 'cp-0', address: cp, controlPlane: true },
      { name: 'worker-0', address: worker },
    ])
    const env = await realHelmEnv(ws.dir, 4)
    const helm = await Helm.detect({
      runner: createRunner(),
      binary: 'helm',
      env: { ...process.env, ...env },
      kubeconfig: path.join(ws.dir, 'constellation-admin.conf'),
    })
    await installFixtureReleases(helm, { coredns: '1.0.0' })
    const res = await status(env)
    expect(res.code, res.stdout + res.stderr).to.equal(0)
    expect(res.stdout).to.match(
      new RegExp(
        `^cp-0\\s+control-plane\\s+${cp.replaceAll('.', '\\.')}\\s+trusted\\s+match\\s+Ready\\s+v1\\.31\\.13$`,
        'm',
      ),
    )
    expect(res.stdout).to.match(/^worker-0\s+worker\s+\S+\s+trusted\s+match\s+Ready\s+v1\.31\.13$/m)
    expect(res.stdout).to.include('Kubernetes v1.31.13; 2 nodes')
    expect(res.stdout).to.include('Helm releases: coredns 1.0.0 (deployed)')
    expect(res.stdout).to.include('Healthy.')
    expect(res.stdout).to.match(/^Attestation: qemu-vtpm is NOT anchored: /m)
    const json = await status(env, '--json')
    expect(json.code, json.stderr).to.equal(0)
    const report = JSON.parse(json.stdout) as {
      healthy: boolean
      nodes: Array<{ name: string; attestation: string }>
      attestation?: { variant: string; anchored: boolean }
    }
    expect(report.healthy).to.equal(true)
    expect(report.attestation).to.include({ variant: 'qemu-vtpm', anchored: false })
    expect(report.nodes.map((n) => [n.name, n.attestation])).to.deep.equal([
      ['cp-0', 'trusted'],
      ['worker-0', 'trusted'],
    ])
  })

  it('names each problem: another cluster’s node, one that does not answer, one NotReady; exit 1', async () => {
    const cp = await startNode()
    const stranger = await startNode(randomBytes(32))
    putNodes([
      { name: 'cp-0', address: cp, controlPlane: true, ready: false },
      { name: 'worker-0', address: stranger },
      { name: 'worker-1', address: ownLoopback() },
    ])
    const res = await status({ PATH: '/usr/bin:/bin' })
    expect(res.code).to.equal(1)
    expect(res.stdout).to.match(/^cp-0\s+control-plane\s+\S+\s+trusted\s+match\s+NotReady/m)
    expect(res.stdout).to.match(/^worker-0\s+worker\s+\S+\s+untrusted\s+mismatch\s+Ready/m)
    expect(res.stdout).to.match(/^worker-1\s+worker\s+\S+\s+unreachable\s+unknown\s+Ready/m)
    expect(res.stdout).to.match(
      /^worker-0: attestation of \S+:30081 failed: [\s\S]*at index 15\n {2}PCR 15 holds another cluster ID/m,
    )
    expect(res.stdout).to.match(/^worker-1: node \S+:30081 is not reachable/m)
    expect(res.stdout).to.match(
      /^cp-0: NotReady: Ready is Unknown \(NodeStatusUnknown: Kubelet stopped posting node status\.\)$/m,
    )
    expect(res.stdout).to.match(/^Helm releases: .*helm/m)
    expect(res.stdout).to.include('NOT healthy')
    expect(res.stderr).to.include('not every node is trusted, of this cluster and Ready')
  })

  it("a stopped Kubernetes upgrade: each kubelet against its target, the cordoned node and its agent's reason; not healthy", async () => {
    const cp = await startNode()
    const worker = await startNode()
    putNodes([
      { name: 'cp-0', address: cp, controlPlane: true },
      { name: 'worker-0', address: worker },
    ])
    const id = 'v1.32.9-20261127t120000z'
    // cp-0 moved; worker-0's agent failed after it changed the node, so the upgrade left it cordoned
    const cp0 = api.get('v1', 'nodes', 'cp-0')!
    api.put('v1', 'nodes', {
      ...cp0,
      status: { ...(cp0.status as Record<string, unknown>), nodeInfo: { kubeletVersion: 'v1.32.9' } },
    })
    const w0 = api.get('v1', 'nodes', 'worker-0')!
    const agentStatus = {
      id: `${id}/worker-0/1`,
      state: 'failed',
      kubernetesVersion: 'v1.32.9',
      step: 'node',
      phase: 'kubelet',
      message: 'restarting kubelet.service failed',
      nodeChanged: true,
      updatedAt: '2026-11-27T12:01:00Z',
    }
    api.put('v1', 'nodes', {
      ...w0,
      metadata: {
        ...w0.metadata,
        annotations: {
          'upgrade.constellation.edgeless.systems/kubernetes-status': JSON.stringify(agentStatus),
        },
      },
      spec: { unschedulable: true },
    })
    const record = {
      id,
      from: 'v1.31.13',
      target: 'v1.32.9',
      componentsDigest: `sha256:${'a'.repeat(64)}`,
      state: 'failed',
      startedAt: '2026-11-27T12:00:00Z',
      updatedAt: '2026-11-27T12:01:00Z',
      order: [
        { node: 'cp-0', step: 'apply' },
        { node: 'worker-0', step: 'node' },
      ],
      nodes: { 'cp-0': { state: 'succeeded', at: '2026-11-27T12:00:30Z' } },
      failure: { node: 'worker-0', phase: 'kubelet', message: 'restarting kubelet.service failed' },
    }
    api.put('v1', 'configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'constellation-kubernetes-upgrade', namespace: 'kube-system' },
      data: { upgrade: JSON.stringify(record) },
    })
    const res = await status({ PATH: '/usr/bin:/bin' })
    expect(res.code, res.stdout + res.stderr).to.equal(1)
    expect(res.stdout).to.match(/^cp-0\s+control-plane\s+\S+\s+trusted\s+match\s+Ready\s+v1\.32\.9$/m)
    expect(res.stdout).to.match(
      /^worker-0\s+worker\s+\S+\s+trusted\s+match\s+Ready,SchedulingDisabled\s+v1\.31\.13 → v1\.32\.9$/m,
    )
    expect(res.stdout).to.include('worker-0: upgrade failed: in kubelet: restarting kubelet.service failed')
    expect(res.stdout).to.include(
      `Kubernetes upgrade to v1.32.9 (${id}): failed, 1 of 2 nodes at v1.32.9; stopped at worker-0 (above); \`upgrade apply --kubernetes v1.32.9\` resumes it`,
    )
    expect(res.stdout).to.include('NOT healthy')
    const json = JSON.parse((await status({ PATH: '/usr/bin:/bin' }, '--json')).stdout) as {
      kubernetesUpgrade: unknown
      nodes: Array<{ name: string; kubernetes?: { unschedulable?: boolean } }>
    }
    expect(json.kubernetesUpgrade).to.deep.equal({
      id,
      target: 'v1.32.9',
      state: 'failed',
      atTarget: 1,
      failure: record.failure,
    })
    expect(json.nodes.find((n) => n.name === 'worker-0')?.kubernetes?.unschedulable).to.equal(true)
  })

  it('without the Kubernetes API it still attests the first node of the workspace, and says the API is down', async () => {
    const cp = await startNode()
    const stateFile = path.join(ws.dir, 'constellation-state.yaml')
    await writeFile(stateFile, (await readFile(stateFile, 'utf8')).replace('127.0.0.1:9000', `${cp}:9000`))
    await api.stop()
    const res = await status({ PATH: '/usr/bin:/bin' }, '--json')
    expect(res.code).to.equal(1)
    const out = JSON.parse(res.stdout) as {
      error: { message: string }
      nodes: Array<{ name: string; attestation: string; clusterIdPcr: string }>
      apiError: string
    }
    expect(out.error.message).to.equal('the Kubernetes API could not be read')
    expect(out.apiError).to.match(/listing Nodes|reading the API server version/)
    expect(out.nodes).to.deep.equal([
      { name: cp, roles: [], address: cp, attestation: 'trusted', clusterIdPcr: 'match' },
    ])
  })
})
