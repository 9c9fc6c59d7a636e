/**
 * Faults, end to end and as processes: a join service killed while nodes wait to join, measurements
 * that no node has (at init and at join), and a genuine attestation replayed at the running join
 * service. Every node is `constellation bootstrap run` with its own swtpm and LUKS2 image; control
 * planes run the real key and join services from the project's systemd units; Kubernetes is the
 * contract fakes of DESIGN §4 (see test/support/test-cluster.ts).
 *
 * Slow (about 3–6 s each): every case first builds its own small cluster (init over aTLS, LUKS2
 * re-keying under cryptsetup, the key and join services' start); the killed-service case then
 * waits out the workers' retry back-off and two `kubeadm join`s, the measurements case runs init
 * twice and a join-config update, the replay case three attested handshakes on a swtpm. What a case
 * checks depends on the steps before it, so each case is one test rather than several that would
 * each rebuild the cluster.
 */
import { randomBytes } from 'node:crypto'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import * as grpc from '@grpc/grpc-js'
import { APIClient, type IssueJoinTicketRequest, type IssueJoinTicketResponse } from '../../src/gen/join.js'
import type { Issuer } from '../../src/lib/attestation/index.js'
import { clientOn, isAttestationFailure, openAttestedClientChannel } from '../../src/lib/atls/index.js'
import { nodePaths, workspacePaths } from '../../src/lib/paths.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { nodeIssuer } from '../../src/wiring/node.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli, type CliResult } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { genuineJoinRequest } from '../support/join-request.js'
import { expectPcr4 } from '../support/local-node.js'
import { freePort } from '../support/ports.js'
import {
  enforcingPcr4,
  joinAuditLines,
  initFirstControlPlane,
  pcr15,
  startTestCluster,
  type ClusterNode,
  type TestCluster,
} from '../support/test-cluster.js'

const execFileAsync = promisify(execFile)
const JOIN_SERVICE = 'constellation-joinservice.service'
const WRONG_PCR4 = 'ab'.repeat(32)

/** `bootstrap run` as the harness's start() runs it, with its log readable while it runs. */
interface WatchedDaemon {
  exited: Promise<CliResult>
  log(): string
  running(): boolean
  stop(): Promise<void>
}

async function startWatched(cluster: TestCluster, node: ClusterNode): Promise<WatchedDaemon> {
  const config = node.local.nodeConfig(`127.0.0.1:${await freePort()}`)
  await writeFile(node.local.configFile, stringifyYaml(config))
  const { child, result } = spawnCli(['bootstrap', 'run', '--config', node.local.configFile], {
    env: {
      ...node.systemd.env,
      KUBEADM_FAKE_API_DIR: cluster.apiDir,
      KUBEADM_FAKE_ADMIN_KUBECONFIG: cluster.adminKubeconfig,
    },
  })
  let log = ''
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()))
  const running = () => child.exitCode === null && child.signalCode === null
  return {
    exited: result,
    log: () => log,
    running,
    async stop() {
      if (!running()) return
      child.kill('SIGTERM')
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await result
      clearTimeout(killer)
    },
  }
}

/** IssueJoinTicket on a new connection that attests with `issuer`: the response, or the gRPC error. */
async function askWith(
  endpoint: string,
  issuer: Issuer,
  request: IssueJoinTicketRequest,
  from: string,
): Promise<IssueJoinTicketResponse | grpc.ServiceError> {
  let channel: grpc.Channel
  try {
    channel = await openAttestedClientChannel(endpoint, issuer, { localAddress: from, deadlineMs: 30_000 })
  } catch (err) {
    return err as grpc.ServiceError
  }
  const client = clientOn(channel, APIClient)
  try {
    return await new Promise((resolve) =>
      client.issueJoinTicket(request, new grpc.Metadata(), { deadline: Date.now() + 30_000 }, (err, res) =>
        resolve(err ?? res),
      ),
    )
  } finally {
    channel.close()
  }
}

describe('faults: a killed join service, wrong measurements, a replayed attestation (CLI processes)', function () {
  this.timeout(300_000)
  let cluster: TestCluster
  let watched: WatchedDaemon[]
  beforeEach(async () => {
    watched = []
    cluster = await startTestCluster()
  })
  afterEach(async () => {
    await Promise.allSettled(watched.map((d) => d.stop()))
    await cluster?.stop()
  })

  it('workers keep asking while the join service is down (SIGKILL) and join once systemd starts it again', async () => {
    const cp0 = await initFirstControlPlane(cluster)
    const killed = await cp0.systemd.pid(JOIN_SERVICE)
    expect(killed).to.be.a('number')
    process.kill(killed!, 'SIGKILL')
    // systemd, the unit's parent, sees its main process die. FakeSystemctl is no parent: its
    // orphans stay zombies where PID 1 reaps nothing, and it takes a zombie for a running unit, so
    // the test forgets the dead unit's pid for it.
    await eventually('the join service gone', async () => (isGone(killed!) ? true : undefined))
    await rm(path.join(cp0.systemd.env.SYSTEMCTL_FAKE_STATE_DIR!, `${JOIN_SERVICE}.pid`))

    const workers = await Promise.all(
      ['worker_0', 'worker_1'].map((name) => cluster.addNode({ name, role: 'worker', peers: [cp0.member] })),
    )
    const daemons = await Promise.all(workers.map((w) => startWatched(cluster, w)))
    watched.push(...daemons)
    // each has asked, been turned away, and asks again: its second round has begun
    for (const [i, d] of daemons.entries())
      await eventually(`worker_${i} asking again`, async () =>
        !d.running()
          ? Promise.reject(new Error(`worker_${i} exited`))
          : /No usable join ticket from this join service/.test(d.log()) &&
              /No join service listens yet; asking again/.test(d.log())
            ? true
            : undefined,
      ).catch((err: unknown) => {
        throw new Error(`worker_${i}'s log:\n${d.log()}`, { cause: err })
      })
    const nodeNames = () =>
      cluster.api
        .list('v1', 'nodes')
        .map((n) => n.metadata.name)
        .sort()
    expect(nodeNames()).to.deep.equal(['cp-0'])
    for (const [i, w] of workers.entries()) {
      expect(existsSync(nodePaths(w.local.root).kubeletClientCert), `worker_${i} kubelet cert`).to.equal(
        false,
      )
      expect(await pcr15(w), `worker_${i} PCR 15`).to.deep.equal(Buffer.alloc(32))
    }
    expect(
      daemons.map((d) => d.running()),
      'both daemons still running',
    ).to.deep.equal([true, true])
    expect((await joinAuditLines(cp0)).filter((l) => /^worker-/.test(l.node ?? ''))).to.deep.equal([])

    // systemd starts the unit again (Restart=), as the bootstrapper starts it: `systemctl start`
    await execFileAsync('systemctl', ['start', JOIN_SERVICE], { env: { ...process.env, ...cp0.systemd.env } })
    const restarted = await cp0.systemd.pid(JOIN_SERVICE)
    expect(restarted).to.be.a('number').and.not.equal(killed)
    await cp0.servicesUp() // names the journals if the service does not come back
    for (const [i, d] of daemons.entries()) {
      // the join client's backoff is at most 30 s: a worker still asking after 120 s says why in its log
      const result = await Promise.race([
        d.exited,
        new Promise<never>((_, reject) =>
          setTimeout(
            () =>
              reject(new Error(`worker_${i} has not joined 120 s after the restart; its log:\n${d.log()}`)),
            120_000,
          ).unref(),
        ),
      ])
      expect(result.code, `worker_${i}:\n${result.stderr}`).to.equal(0)
      expect(result.stderr).to.include('Join ticket received')
    }
    expect(nodeNames()).to.deep.equal(['cp-0', 'worker-0', 'worker-1'])
    for (const w of workers) expect(existsSync(nodePaths(w.local.root).kubeletClientCert)).to.equal(true)
    const audit = await joinAuditLines(cp0)
    for (const node of ['worker-0', 'worker-1'])
      expect(audit.map((l) => [l.node, l.verdict])).to.deep.include([node, 'ok'])
  })

  it('wrong measurements: init is refused before anything is sent and the node still serves Init; a join is refused and gets no ticket', async () => {
    // 1. The operator's config expects a PCR 4 value the node does not have.
    const cp0 = await cluster.addNode({ name: 'cp_0', role: 'control-plane', peers: [] })
    const daemon = await cp0.start()
    const config = await expectPcr4(cp0.local.workspace, WRONG_PCR4)
    const refused = await runCli(['init', '--skip-helm', '-C', cp0.local.workspace])
    expect(refused.code, refused.stdout + refused.stderr).to.equal(4) // attestation failed (README)
    expect(refused.stderr).to.match(/failed attestation; nothing was sent to it/)
    expect(refused.stderr).to.match(/measurement value [0-9a-f]{64} at index 4\b/)
    const cp0Paths = nodePaths(cp0.local.root)
    expect(await pcr15(cp0), 'no node lock').to.deep.equal(Buffer.alloc(32))
    expect(existsSync(cp0Paths.masterSecretFile), 'no master secret on the node').to.equal(false)
    expect(existsSync(cp0.local.nodeConfig('127.0.0.1:0').kubeconfig), 'no kubeconfig on the node').to.equal(
      false,
    )
    expect(existsSync(workspacePaths(cp0.local.workspace).adminConf), 'no admin kubeconfig').to.equal(false)

    // 2. The measurements are put back: the same node, still serving Init, is initialized.
    await writeFile(workspacePaths(cp0.local.workspace).config, config)
    await daemon.expectInitSucceeded(
      await runCli(['init', '--skip-helm', '-C', cp0.local.workspace, '--json']),
    )
    const initialized = await daemon.exited
    expect(initialized.code).to.equal(0)
    // the refused attempt never reached the Init handler: the CLI sent nothing before the check
    expect(initialized.stderr.match(/Init request received/g), initialized.stderr).to.have.length(1)
    expect(existsSync(cp0Paths.masterSecretFile)).to.equal(true)
    await cp0.servicesUp()

    // 3. The cluster now enforces a PCR 4 no node has: a new worker is refused, gets nothing, waits.
    await expectPcr4(cp0.local.workspace, WRONG_PCR4)
    const operator = ['-C', cp0.local.workspace, '--kubeconfig', cluster.adminKubeconfig, '--yes']
    const update = await runCli(['join-config', 'update', ...operator])
    expect(update.code, update.stderr + update.stdout).to.equal(0)
    await enforcingPcr4([cp0], WRONG_PCR4)
    const worker = await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] })
    const waiting = await startWatched(cluster, worker)
    watched.push(waiting)
    const refusal = await eventually('a refused join in cp_0 audit', async () =>
      (await joinAuditLines(cp0)).find((l) => l.verdict === 'refused'),
    )
    expect(refusal.reason).to.match(/measurement value [0-9a-f]{64} at index 4\b/)
    await eventually("the refusal in the worker's log", async () =>
      /refused this node's attestation/.test(waiting.log()) ? true : undefined,
    )
    expect(waiting.log()).to.match(/measurement value [0-9a-f]{64} at index 4\b/)
    expect(waiting.log()).not.to.include('Join ticket received')
    const wp = nodePaths(worker.local.root)
    expect(existsSync(wp.kubeletClientCert), 'no kubelet cert').to.equal(false)
    expect(existsSync(wp.masterSecretFile)).to.equal(false)
    expect(await pcr15(worker)).to.deep.equal(Buffer.alloc(32))
    expect(cluster.api.list('v1', 'nodes').map((n) => n.metadata.name)).to.deep.equal(['cp-0'])
    expect((await joinAuditLines(cp0)).some((l) => l.verdict === 'ok')).to.equal(false)
  })

  it('a genuine attestation replayed at the running join service is refused: the nonce is not the fresh one', async () => {
    const cp0 = await initFirstControlPlane(cluster)
    const endpoint = `127.0.0.1:${cluster.joinPort}`
    // a node that never booted: its TPM's PCR 15 is zero, so only the replay is wrong
    const node = await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] })
    expect(await pcr15(node)).to.deep.equal(Buffer.alloc(32))
    const issuer = nodeIssuer(node.local.nodeConfig('127.0.0.1:0'), node.local.swtpm.open)
    let document: Buffer | undefined
    const recording: Issuer = {
      ...issuer,
      issue: async (userData, nonce) => (document = await issuer.issue(userData, nonce)),
    }

    // 1. The genuine session: the join service's nonce, the node's quote over it and the session: a ticket.
    const from = node.member.vpcIP // the worker's own address, as its join client leaves from it
    const request = () => genuineJoinRequest('worker-0', from)
    const ticket = await askWith(endpoint, recording, await request(), from)
    expect(ticket, 'the genuine attestation gets a ticket').to.not.be.instanceOf(Error)
    expect((ticket as IssueJoinTicketResponse).stateDiskKey).to.have.length(32)

    // 2. The same document on a new connection: it is bound to the nonce of the first.
    const replaying: Issuer = { ...issuer, issue: () => Promise.resolve(document!) }
    expectRefusal(
      await askWith(endpoint, replaying, await request(), from),
      /not bound to this nonce.*replayed document/,
    )

    // 3. A fresh quote over this connection's nonce, bound to another session: what a relay holds.
    const relaying: Issuer = { ...issuer, issue: (_session, nonce) => issuer.issue(randomBytes(32), nonce) }
    expectRefusal(await askWith(endpoint, relaying, await request(), from), /bound to another TLS session/)

    const audit = await joinAuditLines(cp0)
    expect(audit.map((l) => [l.rpc, l.node, l.verdict])).to.deep.equal([
      ['IssueJoinTicket', 'worker-0', 'ok'],
      ['Attest', '', 'refused'],
      ['Attest', '', 'refused'],
    ])
    expect(audit[1]?.reason).to.match(/not bound to this nonce.*replayed document/)
    expect(audit[2]?.reason).to.match(/bound to another TLS session/)
  })
})

function expectRefusal(outcome: IssueJoinTicketResponse | grpc.ServiceError, reason: RegExp): void {
  expect(outcome, 'no ticket').to.be.instanceOf(Error)
  const err = outcome as grpc.ServiceError
  expect(err.code).to.equal(grpc.status.UNAUTHENTICATED)
  expect(isAttestationFailure(err)).to.equal(true)
  expect(err.details).to.match(reason)
}

/** Gone, or a zombie nobody reaps (see the first case). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return true
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] === 'Z'
  } catch {
    return true
  }
}
