/**
 * Join direction: the server requires an attested client bound to a nonce the server chose.
 * Node's TLS client cannot read the CertificateRequest's acceptable-CA list (Constellation's nonce
 * channel), so the nonce comes from a single-use challenge RPC first; the client then presents a
 * per-connection certificate whose Subject CN is base64(nonce) and whose attestation binds that
 * nonce and the certificate key. The server verifies it before gRPC ever sees the connection.
 */
import * as grpc from '@grpc/grpc-js'
import { createServer as createNetServer, type Socket } from 'node:net'
import { createServer as createTlsServer, type TLSSocket } from 'node:tls'
import type { Issuer, ValidationResult, Validator } from '../attestation/index.js'
import { AttestationError } from '../attestation/index.js'
import { ConnectionLimiter, peerAddress, type ConnectionLimits } from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import type { MadeCredential } from '../tpm/index.js'
import { createAttestedCertificate, readPeerCertificate, verifyAttestedCertificate } from './certificate.js'
import { createUnattestedServerCredentials } from './channel-credentials.js'
import { ChallengeService, CHALLENGE_PATH, decodeCredential, encodeCredential } from './challenge.js'
import { ChallengeLimitError, type ChallengeRegistry } from './challenge-registry.js'
import { REFUSAL_PREFIX } from './failure.js'
import { decodeNonce, encodeNonce, NONCE_BYTES } from './nonce.js'
import { SERVER_HANDSHAKE_TIMEOUT_MS } from './server-credentials.js'
import { targetLeavingFrom } from './leave-from.js'

export interface AttestedClientListenerOptions {
  validators: Validator[]
  challenges: ChallengeRegistry
  log?: Logger
  /** Called once per verified client connection, before its first handler runs. */
  onVerified?: (r: ValidationResult, peer: string) => void
  /** Called for each call refused because its connection is not attested (an audit trail per request). */
  onRefusedCall?: (peer: string, method: string, reason: string) => void
  /** Connections per peer address and in all; the defaults fit any genuine node. */
  limits?: ConnectionLimits
  /** A connection whose TLS handshake is not done by then is closed. */
  handshakeTimeoutMs?: number
}

export interface AttestedClientListener {
  port: number
  /**
   * What the connection a call came in on proved (`call.getPeer()`): its validation result, or
   * undefined for a connection that is not attested. Handlers take the node's identity from here
   * (its AK), never from the request.
   */
  attestation(peer: string): ValidationResult | undefined
  /** Stops accepting and closes the connections this listener handed to the gRPC server. */
  close(): Promise<void>
}

type PeerState = { ok: true; result: ValidationResult } | { ok: false; reason: string }

/** Plaintext credentials for injected, already-decrypted TLS sockets, carrying the refusal interceptor. */
class InjectedConnectionCredentials extends grpc.ServerCredentials {
  constructor(private readonly interceptor: grpc.ServerInterceptor) {
    super(null)
  }
  override _getInterceptors(): grpc.ServerInterceptor[] {
    return [this.interceptor]
  }
  override _equals(other: grpc.ServerCredentials): boolean {
    return other === this
  }
}

/**
 * Terminates TLS itself (Node's TLS server, client certificate requested), verifies the client's
 * attested certificate, and only then hands the decrypted connection to the gRPC server. Refused
 * or certificate-less connections are handed over too, so the client gets a clear UNAUTHENTICATED
 * status, but every method except the challenge is refused on them before any handler runs.
 */
export async function listenForAttestedClients(
  server: grpc.Server,
  listen: { host: string; port: number },
  opts: AttestedClientListenerOptions,
): Promise<AttestedClientListener> {
  const own = await createAttestedCertificate(undefined, Buffer.alloc(NONCE_BYTES))
  const peers = new Map<string, PeerState>()
  const interceptor: grpc.ServerInterceptor = (method, call) => {
    if (method.path === CHALLENGE_PATH) return new grpc.ServerInterceptingCall(call)
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            const peer = call.getPeer()
            const state = peers.get(peer)
            if (state?.ok) return pass(metadata)
            const reason = state?.reason ?? 'unknown connection'
            opts.onRefusedCall?.(peer, method.path, reason)
            call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: REFUSAL_PREFIX + reason })
          },
        }),
    })
  }
  const injector = server.createConnectionInjector(new InjectedConnectionCredentials(interceptor))
  /** Connections not through their TLS handshake yet, by peer: close() ends them, grpc-js never saw them. */
  const handshaking = new Map<string, Socket>()
  const tlsServer = createTlsServer(
    // the client certificate is self-signed by design; trust comes from its attestation
    {
      key: own.keyPem,
      cert: own.certPem,
      requestCert: true,
      rejectUnauthorized: false,
      ca: [], // no CA is trusted, so Node builds no root store for client certificates
      ALPNProtocols: ['h2'],
      minVersion: 'TLSv1.2',
      handshakeTimeout: opts.handshakeTimeoutMs ?? SERVER_HANDSHAKE_TIMEOUT_MS,
    },
    (socket: TLSSocket) => {
      const peer = `${socket.remoteAddress}:${socket.remotePort}`
      handshaking.delete(peer)
      socket.once('close', () => peers.delete(peer))
      socket.on('error', () => {}) // a client hanging up mid-stream is not our error
      verifyClient(socket, opts).then(
        (result) => {
          peers.set(peer, { ok: true, result })
          opts.onVerified?.(result, peer)
          injector.injectConnection(socket)
        },
        (err: unknown) => {
          const reason = err instanceof Error ? err.message : String(err)
          if (!(err instanceof NoClientCertificate))
            opts.log?.warn('Refusing unattested client', { peer, error: reason })
          peers.set(peer, { ok: false, reason })
          injector.injectConnection(socket)
        },
      )
    },
  )
  // a failed or timed-out handshake concerns only that client; Node's TLS server only reports it
  tlsServer.on('tlsClientError', (_err, socket) => socket.destroy())
  // counted from accept, before TLS, so that sockets which never speak count too
  const limiter = new ConnectionLimiter(opts.limits, (refusal) =>
    opts.log?.warn('Refusing connections over a limit', { ...refusal }),
  )
  const tcp = createNetServer((socket) => {
    if (!limiter.admit(socket)) return
    const peer = `${socket.remoteAddress}:${socket.remotePort}`
    handshaking.set(peer, socket)
    socket.once('close', () => handshaking.delete(peer))
    tlsServer.emit('connection', socket)
  })
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject)
    tcp.listen(listen.port, listen.host, () => resolve())
  })
  const address = tcp.address()
  return {
    port: typeof address === 'object' && address ? address.port : listen.port,
    attestation: (peer) => {
      const state = peers.get(peer)
      return state?.ok ? state.result : undefined
    },
    close: () =>
      new Promise<void>((resolve) => {
        tcp.close(() => resolve())
        injector.destroy()
        for (const socket of handshaking.values()) socket.destroy()
      }),
  }
}

class NoClientCertificate extends AttestationError {}

async function verifyClient(
  socket: TLSSocket,
  opts: AttestedClientListenerOptions,
): Promise<ValidationResult> {
  // getPeerX509Certificate, not getPeerCertificate: the latter renders every field and three
  // fingerprints into an object (~0.3 ms per join); this is the handshake's own decode of it
  const peerCert = socket.getPeerX509Certificate()
  if (!peerCert) throw new NoClientCertificate('client presented no certificate')
  const cert = await readPeerCertificate(peerCert)
  const nonce = decodeNonce(cert.commonName, 'client certificate subject CN')
  const issued = opts.challenges.open(nonce)
  if (!issued)
    throw new AttestationError(
      'client nonce was not issued by this server, expired, or already used (replay)',
    )
  const result = await verifyAttestedCertificate(cert, opts.validators, nonce, {
    expected: issued.expected,
  })
  // spent only now: a connection that fails attestation cannot burn a genuine node's nonce
  opts.challenges.spend(nonce)
  return result
}

/**
 * The challenge RPC: a fresh nonce, and for a client that sends an activation request (tpm-ek) a
 * credential for its AK, which the client's document must then prove it activated. A refused
 * request (an EK certificate that chains to no configured root, an AK that is not TPM-bound) is
 * told to `onRefused`, for the server's audit trail.
 */
export function addChallengeService(
  server: grpc.Server,
  challenges: ChallengeRegistry,
  validators: readonly Validator[] = [],
  onRefused?: (peer: string, reason: string) => void,
): void {
  server.addService(ChallengeService, {
    issue: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      if (call.request.length === 0) return cb(null, challenges.issue())
      const validator = validators.find((v) => v.challengeActivation)
      if (!validator?.challengeActivation)
        return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'this server takes no activation request' })
      validator.challengeActivation(call.request).then(
        ({ made, expected }) => {
          let nonce: Buffer
          try {
            nonce = challenges.issue(expected, peerAddress(call.getPeer()))
          } catch (err) {
            const code =
              err instanceof ChallengeLimitError ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.INTERNAL
            return cb({ code, details: err instanceof Error ? err.message : String(err) })
          }
          cb(null, Buffer.concat([nonce, encodeCredential(made)]))
        },
        (err: unknown) => {
          const reason = err instanceof Error ? err.message : String(err)
          onRefused?.(call.getPeer(), reason)
          cb({ code: grpc.status.PERMISSION_DENIED, details: REFUSAL_PREFIX + reason })
        },
      )
    },
  })
}

/**
 * Client side: fetch a challenge over TLS (the server is not attested in this direction, as in
 * Constellation's join flow), then return credentials presenting an attested certificate for it.
 * Use them for exactly one channel: the nonce is single-use.
 */
export async function createAttestedClientChannelCredentials(
  target: string,
  issuer: Issuer,
  deadlineMs = 10_000,
  /**
   * The address this node's connections leave from, when the host has several: the caller's
   * channel must dial `targetLeavingFrom(target, localAddress)`, or its connections are refused.
   */
  localAddress?: string,
): Promise<grpc.ChannelCredentials> {
  const plain = createUnattestedServerCredentials({ handshakeTimeoutMs: deadlineMs, localAddress })
  // one call per channel: channelz (which nothing reads) would only register and unregister it
  const client = new (grpc.makeGenericClientConstructor(ChallengeService, 'challenge'))(
    targetLeavingFrom(target, localAddress),
    plain,
    {
      'grpc.enable_channelz': 0,
    },
  )
  const activation = issuer.activationRequest ? await issuer.activationRequest() : Buffer.alloc(0)
  const answer = await new Promise<Buffer>((resolve, reject) =>
    client.makeUnaryRequest(
      CHALLENGE_PATH,
      (b: Buffer) => b,
      (b: Buffer) => b,
      activation,
      { deadline: Date.now() + deadlineMs },
      (err: grpc.ServiceError | null, res?: Buffer) =>
        err || !res ? reject(err ?? new Error('empty challenge')) : resolve(res),
    ),
  ).finally(() => client.close())
  if (answer.length < NONCE_BYTES || (activation.length === 0 && answer.length !== NONCE_BYTES))
    throw new AttestationError(`server challenge has ${answer.length} bytes, want ${NONCE_BYTES}`)
  const nonce = answer.subarray(0, NONCE_BYTES)
  // tpm-ek: the TPM unwraps the credential; the document then carries what it found
  const proof =
    activation.length > 0 ? await activate(issuer, decodeCredential(answer.subarray(NONCE_BYTES))) : undefined
  const attesting: Issuer = proof
    ? { ...issuer, issue: (userData, n) => issuer.issue(userData, n, proof) }
    : issuer
  const cert = await createAttestedCertificate(attesting, nonce, new Date(), encodeNonce(nonce))
  return createUnattestedServerCredentials({
    clientCertificate: cert,
    handshakeTimeoutMs: deadlineMs,
    localAddress,
  })
}

function activate(issuer: Issuer, made: MadeCredential): Promise<Buffer> {
  if (!issuer.activate) throw new AttestationError(`${issuer.variant} cannot activate a credential`)
  return issuer.activate(made)
}
