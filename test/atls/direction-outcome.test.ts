/**
 * Every aTLS direction × every attestation outcome, with the fake attestation authority (no swtpm):
 * an honest peer is served, each lie is refused with a message naming it, and no application data
 * reaches the other side before the attestation verified. The qemu-vtpm validator's own checks
 * are tested in test/attestation; one swtpm smoke case per direction stays in atls.test.ts and
 * join-direction.test.ts.
 */
import * as grpc from '@grpc/grpc-js'
import type { Issuer, Validator } from '../../src/lib/attestation/index.js'
import {
  ChallengeRegistry,
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
  isAttestationFailure,
  listenForAttestedClients,
  openAttestedClientChannel,
} from '../../src/lib/atls/index.js'
import { expect } from '../support/chai.js'
import { createFakeAttestation, type FakeFault } from '../support/fake-attestation.js'
import { echo, echoOn, EchoService, startEchoServer } from './echo-service.js'
import { startRawAttestedPeer } from './raw-attested-peer.js'
import { createAttestedCertificate } from '../../src/lib/atls/certificate.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'

interface Attempt {
  /** The refusal the caller saw (gRPC details, or the verifying server's reason), if any. */
  refusal?: string
  /** Whether the error (when there was one) is recognised as an attestation failure. */
  attestationFailure: boolean
  /** Application bytes the verifying side's application received (handler requests or raw bytes). */
  applicationBytes: number
}

const failure = (err: unknown) => err as grpc.ServiceError

/** Runs a gRPC call against a raw peer: resolves once the peer saw bytes (then hangs up) or the call failed. */
async function callRawPeer(
  port: number,
  creds: grpc.ChannelCredentials,
  peer: { firstBytes: Promise<void>; close(): Promise<void> },
) {
  const call = echo(port, creds).then(
    () => undefined,
    (e: unknown) => e,
  )
  await Promise.race([peer.firstBytes, call])
  await peer.close()
  return call
}

/** Init direction: the node (server) attests itself, the CLI (client) verifies inside connect(). */
async function serverAttested(issuer: Issuer, validator: Validator): Promise<Attempt> {
  const server = await startEchoServer(createAttestedServerCredentials({ issuer }))
  const err = await echo(server.port, createAttestedChannelCredentials({ validators: [validator] })).then(
    () => undefined,
    (e: unknown) => e,
  )
  await server.stop()
  const raw = await startRawAttestedPeer(issuer)
  await callRawPeer(raw.port, createAttestedChannelCredentials({ validators: [validator] }), raw)
  expect(server.calls.length, 'handler runs iff the call succeeded').to.equal(err ? 0 : 1)
  return {
    refusal: err ? failure(err).details : undefined,
    attestationFailure: isAttestationFailure(err),
    applicationBytes: raw.received,
  }
}

/** Join direction: the node (client) attests itself for a challenge nonce and its TLS session, the server verifies. */
async function clientAttested(issuer: Issuer, validator: Validator): Promise<Attempt> {
  const grpcServer = new grpc.Server()
  const requests: Buffer[] = []
  grpcServer.addService(EchoService, {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      requests.push(call.request)
      cb(null, call.request)
    },
  })
  const challenges = new ChallengeRegistry()
  const listener = await listenForAttestedClients(
    grpcServer,
    { host: '127.0.0.1', port: 0 },
    { validators: [validator], challenges },
  )
  try {
    const err = await echoOn(openAttestedClientChannel(`127.0.0.1:${listener.port}`, issuer)).then(
      () => undefined,
      (e: unknown) => e,
    )
    if (err) expect(failure(err).code).to.equal(grpc.status.UNAUTHENTICATED)
    return {
      refusal: err ? failure(err).details : undefined,
      attestationFailure: isAttestationFailure(err),
      applicationBytes: requests.reduce((n, r) => n + r.length, 0),
    }
  } finally {
    await listener.close()
    grpcServer.forceShutdown()
  }
}

/** Mutual: both attest; the client verifies the server inside connect(), the server verifies the client. */
async function mutual(
  server: { issuer: Issuer; validator: Validator },
  client: { issuer: Issuer; validator: Validator },
): Promise<Attempt> {
  const challenges = new ChallengeRegistry()
  const peer = await startRawAttestedPeer(server.issuer, { validators: [client.validator], challenges })
  const nonce = challenges.issue()
  const cert = await createAttestedCertificate(client.issuer, nonce, new Date(), encodeNonce(nonce))
  const err = await callRawPeer(
    peer.port,
    createAttestedChannelCredentials({ validators: [server.validator], clientCertificate: cert }),
    peer,
  )
  const clientRefused = err !== undefined && isAttestationFailure(err)
  return {
    refusal: clientRefused ? failure(err).details : peer.refusals[0],
    attestationFailure: clientRefused || peer.refusals.length > 0,
    applicationBytes: peer.received,
  }
}

const fake = createFakeAttestation()
const directions: Record<string, (fault: FakeFault) => Promise<Attempt>> = {
  'server-attested (init)': (fault) => serverAttested(fake.issuer(fault), fake.validator()),
  'client-attested (join, challenge and attest RPCs)': (fault) =>
    clientAttested(fake.issuer(fault), fake.validator()),
  'mutual, the server lies': (fault) =>
    mutual(
      { issuer: fake.issuer(fault), validator: fake.validator() },
      { issuer: fake.issuer(), validator: fake.validator() },
    ),
  'mutual, the client lies': (fault) =>
    mutual(
      { issuer: fake.issuer(), validator: fake.validator() },
      { issuer: fake.issuer(fault), validator: fake.validator() },
    ),
}
const refusals: Record<Exclude<FakeFault, 'none'>, RegExp> = {
  'wrong-nonce': /document is bound to another nonce \(replayed or made for another verifier\)/,
  'wrong-measurements': /measurement validation failed:\nuntrusted measurement value [0-9a-f]{64} at index 9/,
  expired: /document expired \(issued .*, older than \d+ ms\)/,
  'swapped-key': /certificate hash does not match user data: the certificate key is not the attested key/,
}
/** The join direction binds its document to the TLS session, not to a certificate key. */
const joinRefusals: typeof refusals = {
  ...refusals,
  'swapped-key': /the document is bound to another TLS session/,
}

describe('aTLS direction × outcome with the fake attestation authority (no swtpm)', function () {
  for (const [direction, attempt] of Object.entries(directions)) {
    it(`${direction} × ok: served, and application data flows after verification`, async () => {
      const got = await attempt('none')
      expect(got.refusal).to.equal(undefined)
      expect(got.applicationBytes).to.be.greaterThan(0)
    })
    const expected = direction.startsWith('client-attested') ? joinRefusals : refusals
    for (const [fault, want] of Object.entries(expected)) {
      it(`${direction} × ${fault}: refused, naming it, before any application data`, async () => {
        const got = await attempt(fault as FakeFault)
        expect(got.refusal).to.match(want)
        expect(got.attestationFailure, 'an attestation failure, never retried').to.be.true
        expect(got.applicationBytes, 'application bytes before verification').to.equal(0)
      })
    }
  }
})
