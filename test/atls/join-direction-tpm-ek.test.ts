/**
 * The join direction with tpm-ek, over real gRPC on loopback with swtpms manufactured by swtpm_setup
 * (EK certificates from a local CA per TPM): the challenge RPC carries the client's activation
 * request and answers with a nonce and a credential for its AK; the client's document must prove it
 * activated that credential. Only then does the server serve it.
 */
import { randomBytes, X509Certificate } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import { type Issuer, type ValidationResult } from '../../src/lib/attestation/index.js'
import { createTpmEkIssuer, createTpmEkValidator } from '../../src/lib/attestation/tpm-ek.js'
import {
  ChallengeRegistry,
  isAttestationFailure,
  listenForAttestedClients,
  openAttestedClientChannel,
} from '../../src/lib/atls/index.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { CredentialActivationError } from '../../src/lib/tpm/activate-credential.js'
import { expect } from '../support/chai.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { echoOn, EchoService } from './echo-service.js'

describe('join direction with tpm-ek: credential activation inside the challenge (swtpm with EK certificates)', function () {
  this.timeout(60_000)
  let tpm: SwtpmHandle
  let other: SwtpmHandle
  let server: { port: number; calls: Buffer[]; stop(): Promise<void> }
  let verified: ValidationResult[]

  before(async () => {
    ;[tpm, other] = await Promise.all([
      startSwtpm({ ekCertificate: true }),
      startSwtpm({ ekCertificate: true }),
    ])
  })
  after(async () => Promise.all([tpm?.stop(), other?.stop()]))

  beforeEach(async () => {
    const pcrs = await readPcrs(tpm.open, [4, 9, 15])
    const measurements = new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
    // trusts the first TPM's manufacturer only (its issuing CA: these TPMs carry no intermediate in NV)
    const validator = createTpmEkValidator(measurements, [new X509Certificate(tpm.ekCa!.intermediate)])
    const challenges = new ChallengeRegistry()
    verified = []
    const grpcServer = new grpc.Server()
    const calls: Buffer[] = []
    grpcServer.addService(EchoService, {
      echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        calls.push(call.request)
        cb(null, call.request)
      },
    })
    const listener = await listenForAttestedClients(
      grpcServer,
      { host: '127.0.0.1', port: 0 },
      { validators: [validator], challenges, onVerified: (r) => verified.push(r) },
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
  afterEach(() => server?.stop())

  const target = () => `127.0.0.1:${server.port}`
  const refusal = async (channel: Promise<grpc.Channel>) => {
    const err = await echoOn(channel).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err, 'refused').to.be.instanceOf(Error)
    expect(isAttestationFailure(err), String(err)).to.equal(true)
    expect(server.calls, 'no call reached the service').to.have.length(0)
    return (err as Error).message
  }

  it('serves a node whose TPM activated the credential for its EK and AK', async () => {
    const channel = openAttestedClientChannel(target(), createTpmEkIssuer(tpm.open))
    expect((await echoOn(channel)).toString()).to.equal('secret')
    expect(verified).to.have.length(1)
    expect(verified[0]?.activation?.proven).to.equal(true)
  })

  it('refuses a TPM whose EK certificate comes from another manufacturer, at the challenge', async () => {
    const message = await refusal(openAttestedClientChannel(target(), createTpmEkIssuer(other.open)))
    expect(message).to.match(/EK certificate chain/)
  })

  it('another TPM cannot activate the credential, and a made-up proof is refused', async () => {
    // the request names tpm's EK and AK; the node answering is another TPM
    const genuine = createTpmEkIssuer(tpm.open)
    const foreign = createTpmEkIssuer(other.open)
    const liar: Issuer = { ...foreign, activationRequest: () => genuine.activationRequest() }
    const err = await openAttestedClientChannel(target(), liar).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(CredentialActivationError)
    // so it guesses: the quote is genuine (tpm's), the proof is not
    const guessing: Issuer = { ...genuine, activate: () => Promise.resolve(randomBytes(32)) }
    const message = await refusal(openAttestedClientChannel(target(), guessing))
    expect(message).to.match(/ActivationProof|activation/i)
  })

  it('refuses a proof replayed from an earlier challenge', async () => {
    const issuer = createTpmEkIssuer(tpm.open)
    let earlier: Buffer | undefined
    const recording: Issuer = {
      ...issuer,
      activate: async (made) => (earlier = await issuer.activate(made)),
    }
    await echoOn(openAttestedClientChannel(target(), recording))
    server.calls.length = 0
    const replaying: Issuer = { ...issuer, activate: () => Promise.resolve(earlier!) }
    const message = await refusal(openAttestedClientChannel(target(), replaying))
    expect(message).to.match(/activation|proof|secret/i)
  })
})
