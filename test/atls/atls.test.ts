import { randomBytes } from 'node:crypto'
import { connect as tlsConnect } from 'node:tls'
import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import {
  AttestationError,
  createIssuer,
  createValidator,
  type Issuer,
  type Measurements,
  type ValidationResult,
} from '../../src/lib/attestation/index.js'
import {
  ChallengeRegistry,
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
  isAttestationFailure,
} from '../../src/lib/atls/index.js'
import { echo, startEchoServer, type RunningServer } from './echo-service.js'
import { startRawAttestedPeer } from './raw-attested-peer.js'
import { createAttestedCertificate, verifyAttestedCertificate } from '../../src/lib/atls/certificate.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'

async function measurementsOf(tpm: SwtpmHandle): Promise<Measurements> {
  const pcrs = await readPcrs(tpm.open, [4, 9, 15])
  return new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
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

  it('mutual: both ends attest with the TPM, then application data flows', async () => {
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    const validator = createValidator('qemu-vtpm', await measurementsOf(tpm))
    const challenges = new ChallengeRegistry()
    const peer = await startRawAttestedPeer(issuer, { validators: [validator], challenges })
    const nonce = challenges.issue()
    const clientCertificate = await createAttestedCertificate(issuer, nonce, new Date(), encodeNonce(nonce))
    // the raw peer never answers HTTP/2: wait for the client's first bytes, then hang up
    const call = echo(
      peer.port,
      createAttestedChannelCredentials({ validators: [validator], clientCertificate }),
    ).catch((e: unknown) => e)
    await Promise.race([peer.firstBytes, call])
    await peer.close()
    await call
    expect(peer.refusals).to.deep.equal([])
    expect(peer.received, 'bytes after both attestations verified').to.be.greaterThan(0)
  })

  it('refuses an unknown OID: the call fails as an attestation failure and the handler never runs', async () => {
    const measurements = await measurementsOf(tpm)
    const real = createIssuer('qemu-vtpm', tpm.open)
    const otherOid: Issuer = { variant: real.variant, oid: '1.3.9900.1.1', issue: (u, n) => real.issue(u, n) }
    server = await startEchoServer(createAttestedServerCredentials({ issuer: otherOid }))
    const creds = createAttestedChannelCredentials({
      validators: [createValidator('qemu-vtpm', measurements)],
    })
    const err = await echo(server.port, creds).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err, 'call must fail').to.not.equal(undefined)
    expect((err as grpc.ServiceError).code).to.equal(grpc.status.UNAVAILABLE)
    expect((err as grpc.ServiceError).details).to.match(/unknown OID.*1\.3\.9900\.1\.1/)
    expect(isAttestationFailure(err)).to.be.true
    expect(server.calls, 'spy handler ran').to.have.length(0)
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
