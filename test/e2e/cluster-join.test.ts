/**
 * A cluster grows, end to end and as processes: `bootstrap run` + `constellation init` on the first
 * control plane, which then runs the key and join services from the project's systemd units; a
 * worker and a second control plane join it; a worker joins through the second control plane; the
 * operator changes the measurements the cluster enforces with `constellation join-config update`;
 * two more control planes join at once through different join services, one after the other.
 * Kubernetes is the contract fakes of DESIGN §4 (kubeadm, the API): see test/support/test-cluster.ts.
 *
 * Slow (10–20 s): seven swtpm-backed nodes, each re-keying a LUKS2 image under cryptsetup; the steps
 * depend on each other, so they are one test rather than several that would each rebuild the cluster.
 */
import { X509Certificate } from 'node:crypto'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { nodePaths, workspacePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { expectPcr4 } from '../support/local-node.js'
import { realHelmEnv } from '../support/helm.js'
import { overrideChartsWithFixtures } from '../support/upgrade-workspace.js'
import { enforcingPcr4, joinAuditLines, startTestCluster, type TestCluster } from '../support/test-cluster.js'

describe('a cluster grows: init, worker and control-plane joins, measurements updated (CLI processes)', function () {
  this.timeout(300_000)
  let cluster: TestCluster
  before(async () => (cluster = await startTestCluster()))
  after(() => cluster?.stop())

  it('joins workers and control planes (serving joins themselves, one control plane at a time); join-config update refuses then admits', async () => {
    // 1. The first control plane: init over aTLS, then its key and join services start.
    const cp0 = await cluster.addNode({ name: 'cp_0', role: 'control-plane', peers: [] })
    const daemon0 = await cp0.start()
    // init brings the cluster up with the real helm 4: CNI, DNS and cert-manager (fixture charts)
    await overrideChartsWithFixtures(cp0.local.workspace, {
      cilium: '1.0.0',
      coredns: '1.0.0',
      'cert-manager': '1.0.0',
    })
    const helmEnv = await realHelmEnv(cp0.local.dir, 4)
    const init = await runCli(['init', '-C', cp0.local.workspace, '--json'], { env: helmEnv })
    await daemon0.expectInitSucceeded(init)
    const released = JSON.parse(init.stdout) as { releases: Array<{ name: string }> }
    expect(released.releases.map((r) => r.name)).to.deep.equal(['cilium', 'coredns', 'cert-manager'])
    expect(cluster.api.get('v1', 'secrets', 'sh.helm.release.v1.coredns.v1', 'kube-system')).to.not.equal(
      undefined,
    )
    expect((await daemon0.exited).code).to.equal(0)
    await cp0.servicesUp()
    const joinServicePid = await cp0.systemd.pid('constellation-joinservice.service')
    expect(joinServicePid).to.be.a('number')
    const ws = workspacePaths(cp0.local.workspace)
    // The join service published the measurements the operator sent at init as the cluster's join-config.
    await eventually('the join-config ConfigMap', async () =>
      cluster.api.get('v1', 'configmaps', 'join-config', 'kube-system'),
    )

    // 2. A worker joins through cp_0.
    const worker = await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] })
    const joined = await (await worker.start()).exited
    expect(joined.code, joined.stderr + joined.stdout).to.equal(0)
    const wp = nodePaths(worker.local.root)
    const kubelet = new X509Certificate(await readFile(wp.kubeletClientCert))
    expect(kubelet.subject).to.include('CN=system:node:worker-0')
    expect((await stat(wp.kubeletClientKey)).mode & 0o777).to.equal(0o600)
    expect(await worker.systemd.pid('constellation-joinservice.service')).to.equal(undefined)

    // 3. A second control plane joins through cp_0 and starts its own services (on 127.0.0.2).
    const cp1 = await cluster.addNode({
      name: 'cp_1',
      role: 'control-plane',
      peers: [cp0.member],
      serviceHost: '127.0.0.2',
    })
    const cpJoined = await (await cp1.start()).exited
    expect(cpJoined.code, cpJoined.stderr + cpJoined.stdout).to.equal(0)
    await cp1.servicesUp()
    const cp1Paths = nodePaths(cp1.local.root)
    for (const file of [cp1Paths.masterSecretFile, cp1Paths.masterSaltFile, cp1Paths.joinConfigFile])
      expect((await stat(file)).mode & 0o777, file).to.equal(0o600)
    expect(await readFile(cp1Paths.masterSecretFile)).to.deep.equal(
      await readFile(nodePaths(cp0.local.root).masterSecretFile),
    )

    // 4. A worker that knows only cp_1 joins through it: every control plane serves joins.
    const worker1 = await cluster.addNode({ name: 'worker_1', role: 'worker', peers: [cp1.member] })
    const joined1 = await (await worker1.start()).exited
    expect(joined1.code, joined1.stderr + joined1.stdout).to.equal(0)
    expect((await joinAuditLines(cp1)).map((l) => [l.node, l.verdict])).to.deep.include(['worker-1', 'ok'])

    const nodes = cluster.api
      .list('v1', 'nodes')
      .map((n) => n.metadata.name)
      .sort()
    expect(nodes).to.deep.equal(['cp-0', 'cp-1', 'worker-0', 'worker-1'])

    // 5. The operator enforces a PCR value no node has: a new worker is refused, with the reason
    // logged and no secret sent; restoring the measurements admits it without any restart.
    const config = await expectPcr4(cp0.local.workspace, 'ab'.repeat(32))
    const operator = ['-C', cp0.local.workspace, '--kubeconfig', cluster.adminKubeconfig, '--yes']
    const update = await runCli(['join-config', 'update', ...operator])
    expect(update.code, update.stderr + update.stdout).to.equal(0)
    expect(update.stdout).to.include('PCR 4')
    await enforcingPcr4([cp0, cp1], 'ab'.repeat(32))
    const late = await cluster.addNode({ name: 'worker_2', role: 'worker', peers: [cp0.member] })
    const lateDaemon = await late.start()
    const refusal = await eventually('a refused join in cp_0 audit', async () =>
      (await joinAuditLines(cp0)).find(
        (l) => l.verdict === 'refused' && /PCR 4|measurement/i.test(l.reason ?? ''),
      ),
    )
    expect(refusal.reason).to.not.match(/[0-9a-f]{64}.*[0-9a-f]{64}/) // names the PCR, sends no secret
    await writeFile(ws.config, config)
    const restore = await runCli(['join-config', 'update', ...operator])
    expect(restore.code, restore.stderr + restore.stdout).to.equal(0)
    const lateJoined = await lateDaemon.exited
    expect(lateJoined.code, lateJoined.stderr + lateJoined.stdout).to.equal(0)
    // 6. Two control planes join at once, each through another join service: the cluster's Lease
    // lets one in, the other waits until the first one's Node registered; both join. kubeadm join
    // is held (every node runs cp_0's kubeadm component) so that the two surely overlap.
    const [cp2, cp3] = await Promise.all([
      cluster.addNode({ name: 'cp_2', role: 'control-plane', peers: [cp0.member], serviceHost: '127.0.0.3' }),
      cluster.addNode({ name: 'cp_3', role: 'control-plane', peers: [cp1.member], serviceHost: '127.0.0.4' }),
    ])
    const hold = await cp0.local.holdKubeadm()
    const first = await cp2.start()
    await hold.reached() // cp-2 has its ticket and the turn; its kubeadm join waits
    const second = await cp3.start()
    const queued = await eventually('cp-3 queued behind cp-2 at cp_1', async () => {
      const line = (await cp1.systemd.journal('constellation-joinservice.service'))
        .split('\n')
        .find((l) => l.includes('Control-plane join queued behind another'))
      return line && (JSON.parse(line) as { node: string; joining: string })
    })
    expect(queued).to.include({ node: 'cp-3', joining: 'cp-2' })
    expect(
      (await joinAuditLines(cp1)).some((l) => l.node === 'cp-3'),
      'no ticket for cp-3 yet',
    ).to.equal(false)
    await hold.release()
    for (const r of await Promise.all([first.exited, second.exited]))
      expect(r.code, r.stderr + r.stdout).to.equal(0)
    const cp3Ticket = Date.parse(
      (await joinAuditLines(cp1)).find((l) => l.node === 'cp-3' && l.verdict === 'ok')?.time ?? '',
    )
    // when the kubeadm fake wrote it (to the ms); the file's mtime moves with every status its kubelet posts
    const cp2Registered = Date.parse(
      String(cluster.api.get('v1', 'nodes', 'cp-2')?.metadata.creationTimestamp),
    )
    expect(cp3Ticket, "cp-3's ticket came after cp-2's Node registered").to.be.at.least(cp2Registered)

    // the same join service process throughout: no restart picked up the change
    expect(await cp0.systemd.pid('constellation-joinservice.service')).to.equal(joinServicePid)
    const after = await cp0.systemd.journal('constellation-joinservice.service')
    expect(after).to.include('Join service listening')
    expect(after.match(/Join service listening/g)).to.have.length(1)
  })
})
