import { createHash, randomBytes } from 'node:crypto'
import { createServer as createTlsServer, connect as tlsConnect, type TLSSocket } from 'node:tls'
import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { extendPcr, readPcrs } from '../../src/lib/tpm/index.js'
import {
  AttestationError,
  createIssuer,
  createValidator,
  type Issuer,
  type Measurements,
  type ValidationResult,
} from '../../src/lib/attestation/index.js'
import {
  createAttestedCertificate,
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
  isAttestationFailure,
  verifyAttestedCertificate,
} from '../../src/lib/atls/index.js'
import { echo, startEchoServer, type RunningServer } from './echo-service.js'

const sha256 = (s: string) => createHash('sha256').update(s).digest()

async function measurementsOf(tpm: SwtpmHandle): Promise<Measurements> {
  const pcrs = await readPcrs(tpm.open, [4, 9, 15])
  return new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
}

/** Wraps a real issuer and lies in one way, to play a malicious node. */
function tamperingIssuer(real: Issuer, change: { oid?: string; userData?: Buffer; nonce?: Buffer }): Issuer {
  return {
    variant: real.variant,
    oid: change.oid ?? real.oid,
    issue: (u, n) => real.issue(change.userData ?? u, change.nonce ?? n),
  }
}

describe('aTLS over grpc-js with a swtpm-backed issuer', function () {
  let tpm: SwtpmHandle
  let server: RunningServer | undefined
  beforeEach(async () => (tpm = await startSwtpm()))
  afterEach(async () => {
    await server?.stop()
    server = undefined
    await tpm.stop()
  })

  it('verifies the node inside the handshake, then the call runs', async () => {
    server = await startEchoServer(
      createAttestedServerCredentials({ issuer: createIssuer('qemu-vtpm', tpm.open) }),
    )
    const verified: ValidationResult[] = []
    const creds = createAttestedChannelCredentials({
      validators: [createValidator('qemu-vtpm', await measurementsOf(tpm))],
      onVerified: (r) => verified.push(r),
    })
    expect((await echo(server.port, creds)).toString()).to.equal('secret')
    expect(server.calls).to.have.length(1)
    expect(verified).to.have.length(1)
    expect(verified[0]!.pcrs.get(15)).to.deep.equal(Buffer.alloc(32))
  })

  const refused: Record<
    string,
    { issuer: (real: Issuer) => Issuer; before?: (tpm: SwtpmHandle) => Promise<void>; want: RegExp }
  > = {
    'an enforced PCR changed after the verifier learned it': {
      issuer: (real) => real,
      before: (tpm) => extendPcr(tpm.open, 9, sha256('tampered initrd')),
      want: /untrusted measurement value [0-9a-f]{64} at index 9/,
    },
    "a document for another verifier's nonce (replay)": {
      issuer: (real) => tamperingIssuer(real, { nonce: randomBytes(32) }),
      want: /replayed document/,
    },
    'a certificate key that does not match userData': {
      issuer: (real) => tamperingIssuer(real, { userData: sha256('another key') }),
      want: /certificate hash does not match user data/,
    },
    'an unknown OID': {
      issuer: (real) => tamperingIssuer(real, { oid: '1.3.9900.1.1' }),
      want: /unknown OID.*1\.3\.9900\.1\.1/,
    },
  }
  for (const [name, tc] of Object.entries(refused)) {
    it(`refuses ${name}: the call fails as an attestation failure and the handler never runs`, async () => {
      const measurements = await measurementsOf(tpm)
      await tc.before?.(tpm)
      server = await startEchoServer(
        createAttestedServerCredentials({ issuer: tc.issuer(createIssuer('qemu-vtpm', tpm.open)) }),
      )
      const creds = createAttestedChannelCredentials({
        validators: [createValidator('qemu-vtpm', measurements)],
      })
      const err = await echo(server.port, creds).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err, 'call must fail').to.not.equal(undefined)
      expect((err as grpc.ServiceError).code).to.equal(grpc.status.UNAVAILABLE)
      expect((err as grpc.ServiceError).details).to.match(tc.want)
      expect(isAttestationFailure(err)).to.be.true
      expect(server.calls, 'spy handler ran').to.have.length(0)
    })
  }

  it('sends not a single application byte to a node whose attestation fails', async () => {
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    const received: Record<'good' | 'bad', number> = { good: 0, bad: 0 }
    let mode: 'good' | 'bad' = 'bad'
    const tlsServer = createTlsServer({
      SNICallback: (name, cb) => {
        createAttestedCertificate(issuer, Buffer.from(name, 'base64')).then(
          async ({ certPem, keyPem }) =>
            cb(null, (await import('node:tls')).createSecureContext({ cert: certPem, key: keyPem })),
          (e: Error) => cb(e),
        )
      },
      ALPNProtocols: ['h2'],
    })
    const sockets = new Set<TLSSocket>()
    tlsServer.on('secureConnection', (s: TLSSocket) => {
      sockets.add(s)
      s.on('data', (d: Buffer) => (received[mode] += d.length))
    })
    await new Promise<void>((r) => tlsServer.listen(0, '127.0.0.1', r))
    const port = (tlsServer.address() as { port: number }).port
    try {
      const good = await measurementsOf(tpm)
      const bad: Measurements = new Map([[4, { expected: Buffer.alloc(32, 0xee), warnOnly: false }]])
      const attempt = (m: Measurements) =>
        echo(port, createAttestedChannelCredentials({ validators: [createValidator('qemu-vtpm', m)] })).catch(
          (e: unknown) => e,
        )
      const err = await attempt(bad)
      expect(isAttestationFailure(err)).to.be.true
      expect(received.bad).to.equal(0)
      mode = 'good'
      const pending = attempt(good) // the raw TLS server never answers HTTP/2: wait for the bytes, then hang up
      while (received.good === 0) await new Promise((r) => setTimeout(r, 10))
      for (const s of sockets) s.destroy()
      await pending
      expect(received.good, 'positive control: a verified peer gets the HTTP/2 preface').to.be.greaterThan(0)
    } finally {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => tlsServer.close(() => r()))
    }
  })

  it('refuses a client whose SNI is not a base64 nonce', async () => {
    server = await startEchoServer(
      createAttestedServerCredentials({ issuer: createIssuer('qemu-vtpm', tpm.open) }),
    )
    const port = server.port
    const err = await new Promise<unknown>((resolve) => {
      const s = tlsConnect({
        host: '127.0.0.1',
        port,
        servername: 'node.example',
        rejectUnauthorized: false,
        ALPNProtocols: ['h2'],
      })
      s.once('secureConnect', () => resolve(undefined))
      s.once('error', (e) => resolve(e))
    })
    expect(err).to.be.instanceOf(Error)
  })
})

describe('attested certificate checks', function () {
  let tpm: SwtpmHandle
  beforeEach(async () => (tpm = await startSwtpm()))
  afterEach(() => tpm.stop())

  it('refuses an expired certificate and one not yet valid', async () => {
    const nonce = randomBytes(32)
    const validator = createValidator('qemu-vtpm', await measurementsOf(tpm))
    const hoursAgo = new Date(Date.now() - 3 * 3600_000)
    const old = await createAttestedCertificate(createIssuer('qemu-vtpm', tpm.open), nonce, hoursAgo)
    await expect(verifyAttestedCertificate(old.der, [validator], nonce)).to.be.rejectedWith(
      AttestationError,
      /expired or not yet valid/,
    )
    const future = await createAttestedCertificate(
      createIssuer('qemu-vtpm', tpm.open),
      nonce,
      new Date(Date.now() + 3 * 3600_000),
    )
    await expect(verifyAttestedCertificate(future.der, [validator], nonce)).to.be.rejectedWith(
      AttestationError,
      /expired or not yet valid/,
    )
    const fresh = await createAttestedCertificate(createIssuer('qemu-vtpm', tpm.open), nonce)
    expect((await verifyAttestedCertificate(fresh.der, [validator], nonce)).userData).to.have.length(32)
  })

  it('refuses a certificate whose self-signature was broken', async () => {
    const nonce = randomBytes(32)
    const cert = await createAttestedCertificate(createIssuer('qemu-vtpm', tpm.open), nonce)
    const der = Buffer.from(cert.der)
    der[der.length - 5]! ^= 0xff // inside the signature value
    await expect(
      verifyAttestedCertificate(der, [createValidator('qemu-vtpm', new Map())], nonce),
    ).to.be.rejectedWith(AttestationError)
  })
})
