/**
 * Nodes across reboots, end to end: the join and key services, `bootstrap run`, `init` and
 * `recover` are processes; `state-disk setup` runs in this process with the mount boundary's
 * RecordingMounter (no device-mapper here), on each node's real swtpm (restarted at a reboot, so
 * its PCRs reset) and LUKS2 image. Kubernetes is the contract fakes of DESIGN §4. The mapping the
 * double stands in for is real in test/e2e/mini-vm.test.ts (dm-crypt + dm-integrity in a QEMU VM);
 * this file is about the keys across reboots, which the headers alone decide.
 *
 * Slow (about 10–20 s each): every case first builds the cluster it reboots (init, then joins, each
 * re-keying a LUKS2 image); the steps of a case depend on each other, so they are one test.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { workspacePaths } from '../../src/lib/paths.js'
import { CryptsetupDisk } from '../../src/lib/statedisk/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { expectPcr4 } from '../support/local-node.js'
import {
  enforcingPcr4,
  joinAuditLines,
  initFirstControlPlane,
  pcr15,
  startTestCluster,
  type ClusterNode,
  type TestCluster,
} from '../support/test-cluster.js'

async function joined(node: ClusterNode): Promise<ClusterNode> {
  const result = await (await node.start()).exited
  expect(result.code, result.stderr + result.stdout).to.equal(0)
  return node
}

/** After a reboot: `bootstrap run` starts the kubelet (and a control plane's services), never Init. */
async function expectBootedAsBefore(node: ClusterNode): Promise<void> {
  const boot = await node.bootRun()
  expect(boot.code, boot.stderr + boot.stdout).to.equal(0)
  expect(boot.stderr).to.include('bootstrapped in an earlier boot')
  expect(boot.stderr).not.to.include('Init server listening')
  expect(await node.systemd.pid('kubelet.service'), 'kubelet start requested').to.be.a('number')
  if (node.spec.role === 'control-plane') await node.servicesUp()
}

describe('nodes across reboots: rejoin, recover, reset (CLI processes)', function () {
  this.timeout(300_000)
  let cluster: TestCluster
  beforeEach(async () => (cluster = await startTestCluster()))
  afterEach(() => cluster?.stop())

  it('a rebooted control plane rejoins through another; a worker whose measurements no longer match is refused until they do', async () => {
    const cp0 = await initFirstControlPlane(cluster)
    const cp1 = await joined(
      await cluster.addNode({
        name: 'cp_1',
        role: 'control-plane',
        peers: [cp0.member],
        serviceHost: '127.0.0.2',
      }),
    )
    await cp1.servicesUp()
    const worker = await joined(
      await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member, cp1.member] }),
    )
    const clusterPcr = await pcr15(worker)
    expect(clusterPcr?.some((b) => b !== 0)).to.equal(true)

    // 1. cp_0 reboots; its static metadata now lists cp_1, whose join service gives it its key.
    cp0.spec.peers.push(cp1.member)
    await cp0.reboot()
    expect(await pcr15(cp0)).to.deep.equal(Buffer.alloc(32))
    const disk0 = await cp0.setupDisk()
    expect(await disk0.done).to.equal('rejoined')
    expect(disk0.mounter.mounts).to.deep.equal([{ device: cp0.local.disk.image, fresh: false }])
    expect((await pcr15(cp0))?.equals(clusterPcr!), "PCR 15 is the cluster's again").to.equal(true)
    const rejoin = (await joinAuditLines(cp1)).find((l) => l.rpc === 'IssueRejoinTicket')
    expect(rejoin).to.include({ node: 'cp-0', role: 'control-plane', verdict: 'ok' })
    await expectBootedAsBefore(cp0)

    // 2. The operator enforces a PCR value no node has; the worker reboots and is refused its key.
    const ws = workspacePaths(cp0.local.workspace)
    const config = await expectPcr4(cp0.local.workspace, 'ab'.repeat(32))
    const operator = ['-C', cp0.local.workspace, '--kubeconfig', cluster.adminKubeconfig, '--yes']
    expect((await runCli(['join-config', 'update', ...operator])).code).to.equal(0)
    await enforcingPcr4([cp0, cp1], 'ab'.repeat(32))
    await worker.reboot()
    const disk = await worker.setupDisk()
    await eventually('a refused rejoin in the log', async () =>
      disk.lines.some((l) => l.includes("refused this node's attestation") && /PCR 4|measurement/i.test(l))
        ? true
        : undefined,
    )
    expect(disk.mounter.mounts, 'no key, no mount').to.deep.equal([])
    expect(await pcr15(worker)).to.deep.equal(Buffer.alloc(32))
    // 3. The measurements are restored: the waiting worker gets its key with no restart.
    await writeFile(ws.config, config)
    expect((await runCli(['join-config', 'update', ...operator])).code).to.equal(0)
    expect(await disk.done).to.equal('rejoined')
    expect((await pcr15(worker))?.equals(clusterPcr!)).to.equal(true)
    await expectBootedAsBefore(worker)
  })

  it('every node of a one-control-plane cluster reboots: the control plane waits, recover with a wrong master secret is refused, the right one brings it back', async () => {
    const cp0 = await initFirstControlPlane(cluster)
    const worker = await joined(
      await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] }),
    )
    const clusterPcr = await pcr15(worker)
    await Promise.all([cp0.reboot(), worker.reboot()])
    const disk0 = await cp0.setupDisk()
    const diskW = await worker.setupDisk()

    // a master secret of another cluster: refused, the disk stays closed, the node keeps waiting
    const ws = workspacePaths(cp0.local.workspace)
    const other = path.join(cp0.local.dir, 'other-ws')
    const { mkdir, copyFile } = await import('node:fs/promises')
    await mkdir(other)
    await copyFile(ws.config, path.join(other, path.basename(ws.config)))
    await copyFile(ws.state, path.join(other, path.basename(ws.state)))
    await writeFile(
      path.join(other, path.basename(ws.masterSecret)),
      JSON.stringify({
        key: Buffer.alloc(32, 7).toString('base64'),
        salt: Buffer.alloc(32, 9).toString('base64'),
      }),
      { mode: 0o600 },
    )
    // qemu-vtpm workspaces: --yes, as recover otherwise asks before sending to an unanchored key
    const refused = await runCli(['recover', '-C', other, '--endpoint', disk0.recoveryEndpoint, '--yes'])
    expect(refused.code, refused.stdout + refused.stderr).to.equal(1)
    expect(refused.stderr).to.match(/refused the master secret/)
    expect(disk0.mounter.mounts).to.deep.equal([])
    expect(await pcr15(cp0)).to.deep.equal(Buffer.alloc(32))

    const recovered = await runCli([
      'recover',
      '-C',
      cp0.local.workspace,
      '--endpoint',
      disk0.recoveryEndpoint,
      '--yes',
    ])
    expect(recovered.code, recovered.stdout + recovered.stderr).to.equal(0)
    expect(await disk0.done).to.equal('recovered')
    expect((await pcr15(cp0))?.equals(clusterPcr!)).to.equal(true)
    await expectBootedAsBefore(cp0)
    // with its control plane back, the worker gets its key from the join service
    expect(await diskW.done).to.equal('rejoined')
    await expectBootedAsBefore(worker)
  })

  it('init fails past the node lock: the disk is marked for reset; the next boot formats it and the node is initialized afresh', async () => {
    const cp0 = await cluster.addNode({ name: 'cp_0', role: 'control-plane', peers: [] })
    const image = cp0.local.disk.image
    // a new instance per question: CryptsetupDisk remembers the UUID it read
    const disk = () => new CryptsetupDisk(image, createRunner(), path.join(cp0.local.dir, 'scratch'))
    const uuid = await disk().uuid()
    const failing = await cp0.start({ KUBEADM_FAKE_FAIL: 'init' })
    const init = await runCli(['init', '--skip-helm', '-C', cp0.local.workspace])
    expect(init.code).to.equal(1)
    const daemon = await failing.exited
    expect(daemon.code).to.equal(1)
    expect(daemon.stderr).to.include('marked for reset')
    expect(await disk().probe()).to.deep.equal({ kind: 'luks2', mark: 'reset' })

    await cp0.reboot()
    const setup = await cp0.setupDisk()
    expect(await setup.done).to.equal('formatted')
    expect(await disk().uuid()).not.to.equal(uuid)
    const daemon2 = await cp0.start()
    await daemon2.expectInitSucceeded(
      await runCli(['init', '--skip-helm', '-C', cp0.local.workspace, '--json']),
    )
    expect((await daemon2.exited).code).to.equal(0)
    expect(await disk().probe()).to.deep.equal({ kind: 'luks2', mark: 'initialized' })
  })
})
