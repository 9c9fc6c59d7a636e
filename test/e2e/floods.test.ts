/**
 * Floods, end to end and as processes, run as an attacker would: many connections from other
 * loopback addresses (127.0.0.x; the genuine nodes and the operator are 127.0.0.1) against a rebooted
 * node's recovery endpoint (`constellation state-disk setup`, real cryptsetup and swtpm) and against a
 * running join service (the real unit on a control plane). The genuine operator and nodes must get
 * through, and the node's log must show the flood was bounded. Kubernetes is the contract fakes of
 * DESIGN §4 (see test/support/test-cluster.ts).
 *
 * Slow (about 5–10 s each on 2 cores, minutes before the bounds, when every secret was tried): each
 * case first builds its cluster (init over aTLS, LUKS2 re-keying, the key and join services' start),
 * then sends a few thousand requests at most; the recovery case also reboots the control plane and
 * re-opens its disk with real cryptsetup.
 */
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import * as grpc from '@grpc/grpc-js'
import { APIClient, RecoverMessage } from '../../src/gen/recover.js'
import { APIClient as JoinClient, type IssueJoinTicketResponse } from '../../src/gen/join.js'
import { CHALLENGE_PATH } from '../../src/lib/atls/challenge.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'
import { clientOn, openAttestedClientChannel } from '../../src/lib/atls/index.js'
import { clusterKmsUri, NO_STORE_URI } from '../../src/lib/kms/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { nodeIssuer } from '../../src/wiring/node.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli } from '../support/cli.js'
import { genuineJoinRequest } from '../support/join-request.js'
import { freePort, waitForPort } from '../support/ports.js'
import {
  connectSilently,
  GONE,
  openRawGrpc,
  type RawCallResult,
  type RawGrpcSession,
  type SilentSocket,
} from '../support/raw-peer.js'
import { initFirstControlPlane, pcr15, startTestCluster, type TestCluster } from '../support/test-cluster.js'

const RECOVER = APIClient.service.recover.path
const attackers = (n: number, from = 2) => Array.from({ length: n }, (_, i) => `127.0.0.${from + i}`)
const wrongSecret = () =>
  Buffer.from(
    RecoverMessage.encode({
      kmsUri: clusterKmsUri({ key: randomBytes(32), salt: randomBytes(32) }),
      storageUri: NO_STORE_URI,
    }).finish(),
  )

/** JSON lines of a daemon's log with this message. */
const logLines = (log: string, msg: string) =>
  log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map(
      (l) =>
        JSON.parse(l) as { msg: string; verdict?: string; reason?: string; count?: number; limit?: string },
    )
    .filter((l) => l.msg === msg)

/**
 * `streams` calls at a time on one connection from each address, until `stop()` or `max` calls in
 * all; each call's answer is kept.
 */
function flood(
  sessions: RawGrpcSession[],
  call: (s: RawGrpcSession) => Promise<RawCallResult>,
  { streams, max }: { streams: number; max: number },
) {
  let sent = 0
  let stopped = false
  const answers: RawCallResult[] = []
  const done = Promise.all(
    sessions.flatMap((s) =>
      Array.from({ length: streams }, async () => {
        while (!stopped && sent < max) {
          sent++
          const answer = await call(s)
          answers.push(answer)
          if (answer.code === GONE) return // the server closed this connection (it recovered and stopped)
        }
      }),
    ),
  ).then(() => answers)
  return { done, stop: () => (stopped = true), sent: () => sent }
}

const tally = (answers: RawCallResult[]) =>
  answers.reduce<Record<string, number>>((t, r) => {
    const name = String(grpc.status[r.code])
    return { ...t, [name]: (t[name] ?? 0) + 1 }
  }, {})

describe('floods against real node processes: recovery and join (CLI processes)', function () {
  this.timeout(300_000)
  let cluster: TestCluster
  let sessions: RawGrpcSession[]
  let silent: SilentSocket[]
  let cleanups: (() => Promise<unknown>)[]
  beforeEach(async () => {
    sessions = []
    silent = []
    cleanups = []
    cluster = await startTestCluster()
  })
  afterEach(async () => {
    for (const s of silent) s.socket.destroy()
    await Promise.allSettled(sessions.map((s) => s.close()))
    await Promise.allSettled(cleanups.map((c) => c()))
    await cluster?.stop()
  })
  const open = async (port: number, from: string, servername: string) => {
    const s = await openRawGrpc(port, from, servername)
    sessions.push(s)
    return s
  }
  /** More connections from one address than a server lets it hold; none ever speaks. */
  const holdSilently = async (port: number, from: string, count: number) => {
    for (let i = 0; i < count; i++) silent.push(await connectSilently(port, from))
  }

  it("a rebooted node under a flood of wrong master secrets: the operator's recover succeeds and says so; the node tried few and logged few", async () => {
    const cp0 = await initFirstControlPlane(cluster)
    const clusterPcr = await pcr15(cp0)
    await cp0.reboot() // its only control plane: no join service can give it its key
    const config = cp0.local.nodeConfig(`127.0.0.1:${await freePort()}`) // an Init port it never serves
    await writeFile(cp0.local.configFile, stringifyYaml(config))
    const node = spawnCli(['state-disk', 'setup', '--config', cp0.local.configFile, '--simulate-mapping'], {
      env: cp0.systemd.env,
    })
    let log = ''
    node.child.stderr?.on('data', (d: Buffer) => (log += d.toString()))
    cleanups.push(async () => {
      if (node.child.exitCode === null) node.child.kill('SIGTERM')
      await node.result
    })
    const endpoint = config.recoveryServer.listen
    const port = Number(endpoint.split(':').pop())
    await waitForPort(port, { gaveUp: () => node.child.exitCode !== null }).catch((err: unknown) => {
      throw new Error(`the node does not serve recovery; its log:\n${log}`, { cause: err })
    })

    // 20 addresses, 2 connections each, 4 calls at a time on each; 20 silent connections from one more
    const addresses = attackers(20)
    const conns = await Promise.all(
      [...addresses, ...addresses].map((from) => open(port, from, encodeNonce(randomBytes(32)))),
    )
    const secrets = flood(conns, (s) => s.call(RECOVER, wrongSecret()), { streams: 4, max: 3_000 })
    await holdSilently(port, '127.0.0.50', 20)
    while (secrets.sent() < 500) await new Promise((r) => setTimeout(r, 20))

    const recovered = await runCli([
      'recover',
      '-C',
      cp0.local.workspace,
      '--endpoint',
      endpoint,
      '--timeout',
      '2m',
      '--yes', // the harness's nodes attest with qemu-vtpm, which anchors no key
    ])
    secrets.stop()
    const answers = (await secrets.done).filter((a) => a.code !== GONE)
    expect(recovered.code, recovered.stdout + recovered.stderr).to.equal(0)
    expect(recovered.stdout).to.include(
      `Recovered the node at ${endpoint}: it opens its state disk and boots.`,
    )
    const setup = await node.result
    expect(setup.code, log).to.equal(0)
    expect((await pcr15(cp0))?.equals(clusterPcr!), "PCR 15 is the cluster's again").to.equal(true)

    expect(answers.length).to.be.at.least(500)
    expect(
      answers.filter((a) => a.code === grpc.status.OK),
      'no attacker recovered the node',
    ).to.deep.equal([])
    const requests = logLines(log, 'Recovery request')
    const triedWrong = requests.filter((l) => /does not open this node's state disk/.test(l.reason ?? ''))
    // backing off from 1 s and doubling, an address has at most 8 tries in the first 4 minutes
    expect(triedWrong.length, JSON.stringify(tally(answers))).to.be.at.most(addresses.length * 8)
    expect(answers.filter((a) => a.code === grpc.status.RESOURCE_EXHAUSTED).length).to.be.greaterThan(
      answers.length / 2,
    )
    const untried = requests.filter((l) => l.count !== undefined)
    expect(untried.length, 'the untried cost a few log lines').to.be.at.most(40)
    expect(Math.max(...untried.map((l) => l.count ?? 0))).to.be.at.least(256)
    expect(logLines(log, 'Refusing connections over a limit').map((l) => l.limit)).to.include('peer')
  })

  it('a challenge flood and silent connections against the running join service: a genuine challenge survives and a worker joins', async () => {
    const cp0 = await initFirstControlPlane(cluster)
    const target = `127.0.0.1:${cluster.joinPort}`
    const worker = await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] })
    // a node (its own swtpm) holds a challenge through the whole flood, and answers it afterwards
    const late = await cluster.addNode({ name: 'worker_1', role: 'worker', peers: [cp0.member] })
    // it has its challenge, and quotes only once the flood is over
    let floodOver = () => {}
    const over = new Promise<void>((resolve) => (floodOver = resolve))
    let challenged = () => {}
    const holding = new Promise<void>((resolve) => (challenged = resolve))
    const lateIssuer = nodeIssuer(late.local.nodeConfig('127.0.0.1:0'), late.local.swtpm.open)
    const lateChannel = openAttestedClientChannel(
      target,
      {
        ...lateIssuer,
        issue: async (session, nonce) => (challenged(), await over, lateIssuer.issue(session, nonce)),
      },
      { localAddress: late.member.vpcIP }, // its own address, which the metadata lists for it
    )
    lateChannel.catch(() => {}) // awaited below; a refusal must not surface before that
    await holding

    const conns = await Promise.all(attackers(4).map((from) => open(cluster.joinPort, from, 'constellation')))
    const challenges = flood(conns, (s) => s.call(CHALLENGE_PATH, Buffer.alloc(0)), {
      streams: 50,
      max: 3_000,
    })
    await holdSilently(cluster.joinPort, '127.0.0.9', 24)
    const joining = await worker.start()
    const answers = await challenges.done
    // one challenge per connection: each of the four got its nonce, and was told why not more
    expect(tally(answers)).to.deep.equal({ OK: 4, FAILED_PRECONDITION: 2_996 })
    floodOver()

    const joined = await joining.exited
    expect(joined.code, joined.stderr + joined.stdout).to.equal(0)
    const ticket = await issueJoinTicket(
      await lateChannel,
      await genuineJoinRequest('worker-1', late.member.vpcIP),
    )
    expect(ticket.stateDiskKey).to.have.length(32)
    expect(
      cluster.api
        .list('v1', 'nodes')
        .map((n) => n.metadata.name)
        .sort(),
    ).to.deep.equal(['cp-0', 'worker-0'])
    const journal = await cp0.systemd.journal('constellation-joinservice.service')
    expect(logLines(journal, 'Refusing connections over a limit').map((l) => l.limit)).to.include('peer')
  })
})

function issueJoinTicket(
  channel: grpc.Channel,
  request: Awaited<ReturnType<typeof genuineJoinRequest>>,
): Promise<IssueJoinTicketResponse> {
  const client = clientOn(channel, JoinClient)
  return new Promise<IssueJoinTicketResponse>((resolve, reject) =>
    client.issueJoinTicket(request, new grpc.Metadata(), { deadline: Date.now() + 30_000 }, (err, res) =>
      err ? reject(err) : resolve(res),
    ),
  ).finally(() => channel.close())
}
