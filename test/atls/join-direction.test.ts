import { randomBytes } from 'node:crypto'
import { connect, createServer, type AddressInfo } from 'node:net'
import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import {
  createIssuer,
  createValidator,
  type Issuer,
  type ValidationResult,
} from '../../src/lib/attestation/index.js'
import {
  ChallengeRegistry,
  clientOn,
  listenForAttestedClients,
  isAttestationFailure,
  openAttestedClientChannel,
} from '../../src/lib/atls/index.js'
import { echo, echoOn, EchoService } from './echo-service.js'
import { callRaw } from '../../src/lib/grpc/index.js'
import { createUnattestedServerCredentials } from '../../src/lib/atls/channel-credentials.js'
import {
  ATTEST_PATH,
  ChallengeService,
  CHALLENGE_PATH,
  encodeAttestation,
} from '../../src/lib/atls/challenge.js'

describe('join direction: attested client bound to a server challenge', function () {
  let tpm: SwtpmHandle
  let server: { port: number; calls: Buffer[]; stop(): Promise<void> }
  let challenges: ChallengeRegistry
  let verified: ValidationResult[]
  beforeEach(async () => {
    tpm = await startSwtpm()
    const pcrs = await readPcrs(tpm.open, [4, 9, 15])
    challenges = new ChallengeRegistry()
    verified = []
    const grpcServer = new grpc.Server()
    const calls: Buffer[] = []
    grpcServer.addService(EchoService, {
      echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        calls.push(call.request) // the spy: must stay empty for every refused client
        cb(null, call.request)
      },
    })
    const listener = await listenForAttestedClients(
      grpcServer,
      { host: '127.0.0.1', port: 0 },
      {
        validators: [
          createValidator(
            'qemu-vtpm',
            new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }])),
          ),
        ],
        challenges,
        onVerified: (r) => verified.push(r),
      },
    )
    server = {
      port: listener.port,
      calls,
      stop: async () => {
        await listener.close()
        grpcServer.forceShutdown()
      },
    }
  })
  afterEach(async () => {
    await server?.stop() // absent when the listener never started: the swtpm goes anyway
    await tpm.stop()
  })
  const target = () => `127.0.0.1:${server.port}`
  const expectRefused = async (channel: Promise<grpc.Channel>, want: RegExp) => {
    const err = await echoOn(channel).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((err as grpc.ServiceError | undefined)?.code, 'call must fail').to.equal(
      grpc.status.UNAUTHENTICATED,
    )
    expect((err as grpc.ServiceError).details).to.match(want)
    expect(isAttestationFailure(err)).to.be.true
    expect(server.calls, 'spy handler ran').to.have.length(0)
  }
  /** Issue and Attest by hand on one plain connection, then Echo on it: what a client that does not follow the protocol gets. */
  const byHand = async (steps: (call: (path: string, body: Buffer) => Promise<Buffer>) => Promise<void>) => {
    const channel = new grpc.Channel(target(), createUnattestedServerCredentials(), {})
    const challenge = clientOn(channel, grpc.makeGenericClientConstructor(ChallengeService, 'challenge'))
    const call = (path: string, body: Buffer) => callRaw(challenge, path, body, 10_000)
    await steps(call)
    return echoOn(channel)
  }
  const failureOf = (work: Promise<unknown>) =>
    work.then(
      () => expect.fail('must be refused'),
      (e: unknown) => e as grpc.ServiceError,
    )

  it('serves an attested node that answers a fresh challenge, on one connection', async () => {
    const seen: string[] = []
    const relay = await startRelay(server.port, seen)
    try {
      const channel = openAttestedClientChannel(relay.target, createIssuer('qemu-vtpm', tpm.open))
      expect((await echoOn(channel)).toString()).to.equal('secret')
    } finally {
      await relay.close()
    }
    expect(seen, 'connections').to.have.length(1)
    expect(server.calls).to.have.length(1)
    expect(verified).to.have.length(1)
  })

  it('a node on a shared host: its one connection leaves from its address', async () => {
    const from = '127.0.0.7'
    const seen: string[] = []
    const relay = await startRelay(server.port, seen)
    try {
      const channel = openAttestedClientChannel(relay.target, createIssuer('qemu-vtpm', tpm.open), {
        localAddress: from,
      })
      expect((await echoOn(channel)).toString()).to.equal('secret')
      expect(seen).to.deep.equal([from])
    } finally {
      await relay.close()
    }
  })

  it("credentials for a node's address refuse a channel that dials from elsewhere, naming why", async () => {
    // a plain target: grpc-js dials from 127.0.0.1
    const err = await echo(
      server.port,
      createUnattestedServerCredentials({ localAddress: '127.0.0.7' }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((err as grpc.ServiceError).code).to.equal(grpc.status.UNAVAILABLE)
    expect((err as grpc.ServiceError).details).to.include('the connection left from 127.0.0.1, not 127.0.0.7')
    expect(server.calls).to.have.length(0)
  })

  it('refuses every call on a connection that has not attested', async () => {
    const err = await failureOf(echo(server.port, createUnattestedServerCredentials()))
    expect(err.code).to.equal(grpc.status.UNAUTHENTICATED)
    expect(err.details).to.match(/has not attested: call Issue, then Attest/)
    expect(isAttestationFailure(err)).to.be.true
    expect(server.calls).to.have.length(0)
  })

  it('refuses a document replayed on another connection, and one bound to another session (relay)', async () => {
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    let recorded: Buffer | undefined
    const recording: Issuer = { ...issuer, issue: async (u, n) => (recorded = await issuer.issue(u, n)) }
    await echoOn(openAttestedClientChannel(target(), recording))
    server.calls.length = 0
    const replaying: Issuer = { ...issuer, issue: () => Promise.resolve(recorded!) }
    await expectRefused(openAttestedClientChannel(target(), replaying), /nonce/i)
    // the right nonce, but the session binding of some other connection: a relay's document
    const relaying: Issuer = { ...issuer, issue: (_binding, nonce) => issuer.issue(randomBytes(32), nonce) }
    await expectRefused(openAttestedClientChannel(target(), relaying), /bound to another TLS session/)
  })

  it('refuses a document for a nonce the server never issued', async () => {
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    const guessing: Issuer = { ...issuer, issue: (binding) => issuer.issue(binding, randomBytes(32)) }
    await expectRefused(openAttestedClientChannel(target(), guessing), /nonce/i)
  })

  it('binds the document to the documented exporter: a client written from docs/protocol.md §4 is served', async () => {
    // what another implementation would compute: RFC 5705 exporter, this label, 32 bytes, no context
    let binding = Buffer.alloc(0)
    const credentials = createUnattestedServerCredentials({
      onSecure: (tls) =>
        (binding = tls.exportKeyingMaterial(32, 'EXPORTER-constellation-join-attestation', Buffer.alloc(0))),
    })
    const channel = new grpc.Channel(target(), credentials, {})
    const challenge = clientOn(channel, grpc.makeGenericClientConstructor(ChallengeService, 'challenge'))
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    const nonce = await callRaw(challenge, CHALLENGE_PATH, Buffer.alloc(0), 10_000)
    await callRaw(
      challenge,
      ATTEST_PATH,
      encodeAttestation(issuer.oid, await issuer.issue(binding, nonce)),
      10_000,
    )
    expect((await echoOn(channel)).toString()).to.equal('secret')
    expect(verified).to.have.length(1)
  })

  it('takes one challenge and one answer per connection, and a refused connection stays refused', async () => {
    const noChallenge = await failureOf(
      byHand((call) => call(ATTEST_PATH, encodeAttestation('1.2.3', Buffer.alloc(8))).then(() => {})),
    )
    expect(noChallenge.details).to.match(/no challenge is open on this connection: call Issue first/)
    const twice = await failureOf(
      byHand(
        async (call) =>
          void (await call(CHALLENGE_PATH, Buffer.alloc(0)), await call(CHALLENGE_PATH, Buffer.alloc(0))),
      ),
    )
    expect(twice.code).to.equal(grpc.status.FAILED_PRECONDITION)
    expect(twice.details).to.match(/has had its challenge/)
    // a garbage answer is refused, and so is every call on that connection after it
    const garbage = await failureOf(
      byHand(async (call) => {
        await call(CHALLENGE_PATH, Buffer.alloc(0))
        await call(ATTEST_PATH, encodeAttestation('1.3.9900.1.3', Buffer.from('{}'))).catch(() => {})
      }),
    )
    expect(garbage.code).to.equal(grpc.status.UNAUTHENTICATED)
    expect(isAttestationFailure(garbage)).to.be.true
    expect(server.calls).to.have.length(0)
  })

  it('a challenge is single-use and expires', () => {
    let now = 0
    const reg = new ChallengeRegistry(() => now)
    const a = reg.issue()
    expect(reg.consume(a)).to.be.true
    expect(reg.consume(a)).to.be.false
    const b = reg.issue()
    now += 61_000
    expect(reg.consume(b)).to.be.false
    expect(reg.consume(randomBytes(32))).to.be.false
  })
})

/** A TCP relay to 127.0.0.1:`port` that records the address each connection came from. */
async function startRelay(port: number, seen: string[]) {
  const relay = createServer((inbound) => {
    seen.push(inbound.remoteAddress ?? '')
    const outbound = connect({ host: '127.0.0.1', port })
    inbound.pipe(outbound).pipe(inbound)
    const end = () => (inbound.destroy(), outbound.destroy())
    inbound.on('error', end).on('close', end)
    outbound.on('error', end).on('close', end)
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  return {
    target: `127.0.0.1:${(relay.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => relay.close(resolve)),
  }
}
