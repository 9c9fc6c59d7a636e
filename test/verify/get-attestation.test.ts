import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import protobuf from 'protobufjs'
import { randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from '../support/chai.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { createValidator, type Issuer, type Measurements } from '../../src/lib/attestation/index.js'
import { parseNodeConfig } from '../../src/lib/nodeconfig/node-config.js'
import { silentLogger } from '../../src/lib/system/logger.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { verifyNode, VerifyServiceDaemon } from '../../src/lib/verify/index.js'
import {
  attestWithGetAttestation,
  type AttestationSeen,
} from '../../src/lib/verify/get-attestation-client.js'
import type { ValidationResult, Validator } from '../../src/lib/attestation/index.js'
import { createVerifyService } from '../../src/wiring/verify-service.js'

const PROTO = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../proto/verify.proto')

interface GetAttestationClient extends grpc.Client {
  getAttestation(
    req: { nonce: Buffer },
    cb: (err: grpc.ServiceError | null, res?: { attestation: Buffer }) => void,
  ): void
}

/** A client built from proto/verify.proto alone, as any gRPC user (or Constellation's CLI) would have. */
function clientFromProtoFile(endpoint: string): GetAttestationClient {
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO)) as unknown as {
    verify: {
      API: new (
        target: string,
        creds: grpc.ChannelCredentials,
        opts: grpc.ChannelOptions,
      ) => GetAttestationClient
    }
  }
  // a connection of its own: grpc-js would otherwise share one between clients of one target
  return new loaded.verify.API(endpoint, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  })
}

const ask = (client: GetAttestationClient, nonce: Buffer) =>
  new Promise<Buffer>((resolve, reject) =>
    client.getAttestation({ nonce }, (err, res) => (err || !res ? reject(err) : resolve(res.attestation))),
  )

describe('verify.API/GetAttestation on the verification service', function () {
  this.timeout(60_000)

  it("proto/verify.proto keeps Constellation's package, method path and field numbers", () => {
    const root = protobuf.loadSync(PROTO)
    const service = root.lookupService('verify.API')
    expect(Object.keys(service.methods)).to.deep.equal(['GetAttestation'])
    expect(service.methods.GetAttestation?.requestType).to.equal('GetAttestationRequest')
    const request = root.lookupType('verify.GetAttestationRequest')
    expect(request.fieldsArray.map((f) => [f.name, f.id, f.type])).to.deep.equal([['nonce', 2, 'bytes']])
    expect(request.reserved).to.deep.equal([[1, 1]]) // Constellation removed user_data
    const response = root.lookupType('verify.GetAttestationResponse')
    expect(response.fieldsArray.map((f) => [f.name, f.id, f.type])).to.deep.equal([
      ['attestation', 1, 'bytes'],
    ])
  })

  describe('on swtpm', () => {
    let tpm: SwtpmHandle
    let daemon: VerifyServiceDaemon
    let endpoint: string
    let client: GetAttestationClient
    beforeEach(async () => {
      tpm = await startSwtpm()
      const config = parseNodeConfig(
        `attestationVariant: qemu-vtpm\ntpm: {swtpm: "${tpm.endpoint}"}\nverifyService: {listen: "127.0.0.1:${await freePort()}"}\n`,
        'node.yaml',
      )
      daemon = createVerifyService(config, silentLogger)
      endpoint = await daemon.start()
      client = clientFromProtoFile(endpoint)
    })
    afterEach(async () => {
      client.close()
      await daemon.stop(1000)
      await tpm.stop()
    })
    const measured = async (): Promise<Measurements> => {
      const pcrs = await readPcrs(tpm.open, [4, 9, 15])
      return new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
    }

    it('answers a client generated from verify.proto with a document the validator accepts for that nonce', async () => {
      const nonce = randomBytes(32)
      const document = await ask(client, nonce)
      const result = await createValidator('qemu-vtpm', await measured()).validate(document, nonce)
      // Constellation's service issues with this userData and its CLI insists on it
      expect(result.userData.toString()).to.equal('VerifyService')
      expect(result.pcrs.size).to.equal(24)
    })

    it('a document replayed for another nonce is refused', async () => {
      const document = await ask(client, randomBytes(32))
      await expect(
        createValidator('qemu-vtpm', await measured()).validate(document, randomBytes(32)),
      ).to.be.rejectedWith(/quote is not bound to this nonce/)
    })

    it('serves attested TLS on the same port: verify works through either protocol', async () => {
      const measurements = await measured()
      for (const protocol of ['atls', 'get-attestation'] as const) {
        const { report, error } = await verifyNode({ endpoint, variant: 'qemu-vtpm', measurements, protocol })
        expect(error, protocol).to.equal(undefined)
        expect(report?.trusted, protocol).to.be.true
      }
    })

    it("answers Constellation's REST form, GET /?nonce=<base64url>, on the same port", async () => {
      const nonce = randomBytes(32)
      const res = await fetch(`http://${endpoint}/?nonce=${nonce.toString('base64url')}`)
      expect(res.status).to.equal(200)
      const body = (await res.json()) as { data: string }
      const result = await createValidator('qemu-vtpm', await measured()).validate(
        Buffer.from(body.data, 'base64'),
        nonce,
      )
      expect(result.userData.toString()).to.equal('VerifyService')
      const refusals: Array<[string, RequestInit, number, RegExp]> = [
        ['/', {}, 400, /nonce parameter is required exactly once/],
        [`/?nonce=${randomBytes(16).toString('base64url')}`, {}, 400, /nonce: 16 bytes/],
        ['/?nonce=a&nonce=b', {}, 400, /exactly once/],
        ['/?nonce=%25%25', {}, 400, /invalid base64url/],
      ]
      for (const [url, init, status, says] of refusals) {
        const refused = await fetch(`http://${endpoint}${url}`, init)
        expect(refused.status, url).to.equal(status)
        expect(await refused.text(), url).to.match(says)
      }
    })

    const nonces: Record<string, { nonce: Buffer; code: grpc.status; details: RegExp }> = {
      'an empty nonce': {
        nonce: Buffer.alloc(0),
        code: grpc.status.INVALID_ARGUMENT,
        details: /nonce is required/,
      },
      'a 31-byte nonce': {
        nonce: randomBytes(31),
        code: grpc.status.INVALID_ARGUMENT,
        details: /nonce: 31 bytes; it must be 32 to 64/,
      },
      'a 65-byte nonce': {
        nonce: randomBytes(65),
        code: grpc.status.INVALID_ARGUMENT,
        details: /nonce: 65 bytes/,
      },
      'a request over 1 KiB': {
        nonce: randomBytes(2048),
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: /larger than max/,
      },
    }
    for (const [name, tc] of Object.entries(nonces))
      it(`refuses ${name}`, async () => {
        const err = await ask(client, tc.nonce).then(
          () => undefined,
          (e: unknown) => e as grpc.ServiceError,
        )
        expect(err?.code).to.equal(tc.code)
        expect(err?.details).to.match(tc.details)
      })
  })

  describe('bounds', () => {
    let daemon: VerifyServiceDaemon
    let endpoint: string
    const started: Array<() => void> = []
    /** An issuer whose quotes finish only when the test lets them, to hold calls in flight. */
    const heldIssuer: Issuer = {
      variant: 'qemu-vtpm',
      oid: '1.3.9900.5.1',
      issue: () =>
        new Promise<Buffer>((resolve) => started.push(() => resolve(Buffer.from('{"not":"checked"}')))),
    }
    beforeEach(async () => {
      daemon = new VerifyServiceDaemon('127.0.0.1:0', heldIssuer, silentLogger, undefined, {
        handshakeTimeoutMs: 300,
        getAttestation: { perPeer: 2, total: 8 },
      })
      endpoint = await daemon.start()
    })
    afterEach(async () => {
      for (const release of started.splice(0)) release()
      await daemon.stop(1000)
    })

    it('refuses a third quote in flight from one address with RESOURCE_EXHAUSTED and a pushback', async () => {
      const clients = [0, 1, 2].map(() => clientFromProtoFile(endpoint))
      try {
        const held = clients.slice(0, 2).map((c) => ask(c, randomBytes(32)))
        while (started.length < 2) await new Promise((r) => setTimeout(r, 10))
        const third = await new Promise<grpc.ServiceError>((resolve) =>
          clients[2]!.getAttestation({ nonce: randomBytes(32) }, (err) => resolve(err!)),
        )
        expect(third.code).to.equal(grpc.status.RESOURCE_EXHAUSTED)
        expect(third.details).to.match(/2 attestations for this address are being issued already/)
        expect(third.metadata.get('grpc-retry-pushback-ms')).to.deep.equal(['1000'])
        for (const release of started.splice(0)) release()
        expect((await Promise.all(held)).map((b) => b.toString())).to.deep.equal([
          '{"not":"checked"}',
          '{"not":"checked"}',
        ])
      } finally {
        for (const c of clients) c.close()
      }
    })

    const closedBy: Record<string, (s: Socket) => void> = {
      'a peer that never sends a byte': () => {},
      'a peer that speaks neither TLS, HTTP/2 nor a GET': (s) => s.write('SSH-2.0-OpenSSH_9.2\r\n'),
    }
    for (const [name, act] of Object.entries(closedBy))
      it(`closes ${name}`, async () => {
        const { port } = new URL(`tcp://${endpoint}`)
        const socket = connect(Number(port), '127.0.0.1')
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
        act(socket)
        await new Promise<void>((resolve) => socket.once('close', () => resolve()).resume())
      })
  })

  describe('the operator side refuses what the validator alone would pass', () => {
    let daemon: VerifyServiceDaemon
    let endpoint: string
    beforeEach(async () => {
      const issuer: Issuer = {
        variant: 'qemu-vtpm',
        oid: '1.3.9900.5.1',
        issue: async () => Buffer.from('doc'),
      }
      daemon = new VerifyServiceDaemon('127.0.0.1:0', issuer, silentLogger)
      endpoint = await daemon.start()
    })
    afterEach(() => daemon.stop(1000))

    /** A validator that passes any document with this result: only what follows it is under test. */
    const stubValidator = (result: Partial<ValidationResult>): Validator => ({
      variant: 'tpm-ek',
      oid: '1.3.9900.5.100',
      validate: async () => ({
        userData: Buffer.from('VerifyService'),
        pcrs: new Map(),
        warnings: [],
        akName: Buffer.alloc(34),
        ...result,
      }),
    })
    const cases: Record<string, { result: Partial<ValidationResult>; refused?: RegExp }> = {
      'a document for other user data (an aTLS certificate key, say)': {
        result: { userData: Buffer.alloc(32) },
        refused: /user data is not "VerifyService"/,
      },
      'tpm-ek without a credential activation, which the RPC cannot run': {
        // the EK is never read on this path: only `proven` decides
        result: { activation: { ek: undefined as never, akName: Buffer.alloc(34), proven: false } },
        refused:
          /counts only after credential activation, which get-attestation cannot perform; use --protocol atls/,
      },
      'a document the validator passes with userData "VerifyService"': { result: {} },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const seen: AttestationSeen = {}
        const got = attestWithGetAttestation(endpoint, stubValidator(tc.result), 5_000, seen)
        if (!tc.refused) {
          await expect(got).to.eventually.deep.equal({ variant: 'tpm-ek' })
          expect(seen.verified).to.not.equal(undefined)
          return
        }
        await expect(got).to.be.rejectedWith(tc.refused)
        expect(String(seen.refusal)).to.match(tc.refused) // so verify reports exit 4, not unreachable
      })
  })
})
