/**
 * Server-attested aTLS with tpm-ek (init, verify, recover): after the handshake's quote checks out,
 * the client has the node unwrap a credential made for the EK in its certificate and the AK that
 * quoted, on a second connection, before grpc-js may use the first. Real grpc-js on loopback, swtpms
 * manufactured by swtpm_setup.
 */
import { X509Certificate } from 'node:crypto'
import type * as grpc from '@grpc/grpc-js'
import { type Issuer, type ValidationResult } from '../../src/lib/attestation/index.js'
import { createTpmEkIssuer, createTpmEkValidator } from '../../src/lib/attestation/tpm-ek.js'
import {
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
  isAttestationFailure,
} from '../../src/lib/atls/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { echo, startEchoServer, type RunningServer } from './echo-service.js'

describe('server-attested aTLS with tpm-ek: credential activation before the first call (swtpm with EK certificates)', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let other: SwtpmHandle
  let server: RunningServer | undefined
  let verified: ValidationResult[]
  let credentials: () => grpc.ChannelCredentials

  before(async () => {
    ;[tpm, other] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
    ])
    const pcrs = await readPcrs(tpm.open, [4, 9, 15])
    const measurements = new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
    const validator = createTpmEkValidator(measurements, [new X509Certificate(tpm.ekCa!.intermediate)])
    credentials = () =>
      createAttestedChannelCredentials({ validators: [validator], onVerified: (r) => verified.push(r) })
  })
  after(async () => Promise.all([tpm?.stop(), other?.stop()]))
  beforeEach(() => (verified = []))
  afterEach(async () => {
    await server?.stop()
    server = undefined
  })

  const serve = async (issuer: Issuer) =>
    (server = await startEchoServer(createAttestedServerCredentials({ issuer })))
  const refused = async () => {
    const err = await echo(server!.port, credentials()).catch((e: unknown) => e)
    expect(isAttestationFailure(err), String(err)).to.equal(true)
    expect(server!.calls, 'no call reached the service').to.have.length(0)
    return (err as Error).message
  }

  it('trusts a node whose TPM unwraps the credential, and only then sends the call', async () => {
    await serve(createTpmEkIssuer(tpm.open))
    expect((await echo(server!.port, credentials())).toString()).to.equal('secret')
    expect(verified.map((r) => r.activation?.proven)).to.deep.equal([true])
  })

  it('refuses a node that answers another secret (an AK not in the TPM of that EK)', async () => {
    const issuer = createTpmEkIssuer(tpm.open)
    await serve({ ...issuer, activate: () => Promise.resolve(Buffer.alloc(32, 7)) })
    expect(await refused()).to.match(/credential activation failed: the node answered another secret/)
  })

  it('refuses a node that cannot activate (no activation service, or another TPM behind it)', async () => {
    const { activate: _dropped, ...without } = createTpmEkIssuer(tpm.open)
    await serve(without)
    expect(await refused()).to.match(/credential activation failed: the node did not unwrap/)
    await server!.stop()
    const genuine = createTpmEkIssuer(tpm.open)
    const foreign = createTpmEkIssuer(other.open)
    await serve({ ...genuine, activate: (made) => foreign.activate(made) })
    expect(await refused()).to.match(/credential activation failed: the node did not unwrap/)
  })

  it('refuses a TPM from another manufacturer in the handshake, before any activation', async () => {
    await serve(createTpmEkIssuer(other.open))
    expect(await refused()).to.match(/EK certificate chain/)
  })
})
