import { randomBytes } from 'node:crypto'
import { connect, createServer, type AddressInfo } from 'node:net'
import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { createIssuer, createValidator, type ValidationResult } from '../../src/lib/attestation/index.js'
import {
  addChallengeService,
  ChallengeRegistry,
  listenForAttestedClients,
  isAttestationFailure,
  targetLeavingFrom,
} from '../../src/lib/atls/index.js'
import { echo, EchoService } from './echo-service.js'
import { createAttestedCertificate } from '../../src/lib/atls/certificate.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'
import { createAttestedClientChannelCredentials } from '../../src/lib/atls/client-attested.js'

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
    addChallengeService(grpcServer, challenges)
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
  const expectRefused = async (creds: grpc.ChannelCredentials, want: RegExp) => {
    const err = await echo(server.port, creds).then(
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

  it('serves an attested node that answers a fresh challenge', async () => {
    const creds = await createAttestedClientChannelCredentials(target(), createIssuer('qemu-vtpm', tpm.open))
    expect((await echo(server.port, creds)).toString()).to.equal('secret')
    expect(server.calls).to.have.length(1)
    expect(verified).to.have.length(1)
  })

  it('a node on a shared host: every connection leaves from its address, one per channel', async () => {
    const from = '127.0.0.7'
    const seen: string[] = []
    const relay = createServer((inbound) => {
      seen.push(inbound.remoteAddress ?? '')
      const outbound = connect({ host: '127.0.0.1', port: server.port })
      inbound.pipe(outbound).pipe(inbound)
      const end = () => (inbound.destroy(), outbound.destroy())
      inbound.on('error', end).on('close', end)
      outbound.on('error', end).on('close', end)
    })
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
    try {
      const target = `127.0.0.1:${(relay.address() as AddressInfo).port}`
      const creds = await createAttestedClientChannelCredentials(
        target,
        createIssuer('qemu-vtpm', tpm.open),
        10_000,
        from,
      )
      expect((await echo(targetLeavingFrom(target, from), creds)).toString()).to.equal('secret')
      // the challenge's channel and the call's: none dialled from elsewhere and dropped
      expect(seen).to.deep.equal([from, from])
    } finally {
      await new Promise((resolve) => relay.close(resolve))
    }
  })

  it("credentials for a node's address refuse a channel that dials from elsewhere, naming why", async () => {
    const creds = await createAttestedClientChannelCredentials(
      target(),
      createIssuer('qemu-vtpm', tpm.open),
      10_000,
      '127.0.0.7',
    )
    // a plain target: grpc-js dials from 127.0.0.1
    const err = await echo(server.port, creds).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((err as grpc.ServiceError).code).to.equal(grpc.status.UNAVAILABLE)
    expect((err as grpc.ServiceError).details).to.include('the connection left from 127.0.0.1, not 127.0.0.7')
    expect(server.calls).to.have.length(0)
  })

  it('refuses a replay of a used challenge (same certificate on a new connection)', async () => {
    const creds = await createAttestedClientChannelCredentials(target(), createIssuer('qemu-vtpm', tpm.open))
    await echo(server.port, creds)
    server.calls.length = 0
    await expectRefused(creds, /already used \(replay\)/)
  })

  it('refuses a nonce the server never issued', async () => {
    const replay = await createAttestedCertificate(
      createIssuer('qemu-vtpm', tpm.open),
      randomBytes(32),
      new Date(),
      encodeNonce(randomBytes(32)),
    )
    await expectRefused(
      grpc.credentials.createSsl(null, Buffer.from(replay.keyPem), Buffer.from(replay.certPem), {
        rejectUnauthorized: false,
      }),
      /not issued by this server, expired, or already used/,
    )
  })

  it('refuses a client without a certificate', async () => {
    await expectRefused(
      grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false }),
      /no certificate/,
    )
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
