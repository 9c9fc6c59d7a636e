/**
 * Join direction, server side: the server requires an attested client bound to a nonce the server
 * chose, all on one connection. Node's TLS client cannot read the CertificateRequest's acceptable-CA
 * list (Constellation's nonce channel), so the client takes the nonce from the Issue RPC of the
 * connection it is on, and answers with the Attest RPC on it: a document bound to that nonce and
 * to the connection's TLS session (sessionBinding). Every other method is refused on a connection
 * until its Attest verified, before any handler runs.
 */
import * as grpc from '@grpc/grpc-js'
import { createServer as createNetServer, type Socket } from 'node:net'
import { createServer as createTlsServer, type TLSSocket } from 'node:tls'
import type { ValidationResult, Validator } from '../attestation/index.js'
import { AttestationError } from '../attestation/index.js'
import { ConnectionLimiter, peerAddress, type ConnectionLimits } from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { createAttestedCertificate } from './certificate.js'
import {
  ATTEST_PATH,
  ChallengeService,
  CHALLENGE_PATH,
  decodeAttestation,
  encodeCredential,
  sessionBinding,
} from './challenge.js'
import { ChallengeLimitError, type ChallengeRegistry } from './challenge-registry.js'
import { REFUSAL_PREFIX } from './failure.js'
import { NONCE_BYTES } from './nonce.js'
import { SERVER_HANDSHAKE_TIMEOUT_MS } from './server-credentials.js'

export interface AttestedClientListenerOptions {
  validators: Validator[]
  challenges: ChallengeRegistry
  log?: Logger
  /** Called once per verified client connection, before its first handler runs. */
  onVerified?: (r: ValidationResult, peer: string) => void
  /** Called for each call refused because its connection is not attested (an audit trail per request). */
  onRefusedCall?: (peer: string, method: string, reason: string) => void
  /** A refused Attest, or a refused tpm-ek activation request at Issue: that node reaches no handler, so its audit trail starts here. */
  onRefusedAttestation?: (peer: string, rpc: 'Challenge' | 'Attest', reason: string) => void
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

/** One TLS connection handed to the gRPC server, and how far its attestation got. */
interface Connection {
  /** sessionBinding() of its TLS session: what its document's userData must be. */
  binding: Buffer
  /** Issue was called: a connection gets one challenge, and one answer to it. */
  challenged: boolean
  /** The nonce issued on it and not yet answered. */
  nonce?: Buffer
  outcome?: { ok: true; result: ValidationResult } | { ok: false; reason: string }
}

const NOT_ATTESTED = 'this connection has not attested: call Issue, then Attest, on the connection you ask on'

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
 * Terminates TLS itself (Node's TLS server, TLS 1.3 only, no client certificate), serves Issue and
 * Attest on `server`, and hands every connection to the gRPC server; on a connection whose Attest
 * did not verify, every other method is refused (UNAUTHENTICATED) before any handler runs.
 */
export async function listenForAttestedClients(
  server: grpc.Server,
  listen: { host: string; port: number },
  opts: AttestedClientListenerOptions,
): Promise<AttestedClientListener> {
  const own = await createAttestedCertificate(undefined, Buffer.alloc(NONCE_BYTES))
  const connections = new Map<string, Connection>()
  addChallengeService(server, connections, opts)
  const interceptor: grpc.ServerInterceptor = (method, call) => {
    if (method.path === CHALLENGE_PATH || method.path === ATTEST_PATH)
      return new grpc.ServerInterceptingCall(call)
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            const peer = call.getPeer()
            const outcome = connections.get(peer)?.outcome
            if (outcome?.ok) return pass(metadata)
            const reason = outcome?.reason ?? NOT_ATTESTED
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
    {
      key: own.keyPem,
      cert: own.certPem,
      ALPNProtocols: ['h2'],
      // the session binding is unique to a session only from TLS 1.3 on
      minVersion: 'TLSv1.3',
      handshakeTimeout: opts.handshakeTimeoutMs ?? SERVER_HANDSHAKE_TIMEOUT_MS,
    },
    (socket: TLSSocket) => {
      const peer = `${socket.remoteAddress}:${socket.remotePort}`
      handshaking.delete(peer)
      socket.on('error', () => {}) // a client hanging up mid-stream is not our error
      let binding: Buffer
      try {
        binding = sessionBinding(socket)
      } catch {
        return socket.destroy() // a socket closed meanwhile has no session left
      }
      connections.set(peer, { binding, challenged: false })
      socket.once('close', () => connections.delete(peer))
      injector.injectConnection(socket)
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
      const outcome = connections.get(peer)?.outcome
      return outcome?.ok ? outcome.result : undefined
    },
    close: () =>
      new Promise<void>((resolve) => {
        tcp.close(() => resolve())
        injector.destroy()
        for (const socket of handshaking.values()) socket.destroy()
      }),
  }
}

type Reply = grpc.sendUnaryData<Buffer>
const refuse = (reply: Reply, code: grpc.status, reason: string) =>
  reply({ code, details: REFUSAL_PREFIX + reason })

/**
 * Issue: a fresh nonce for this connection, and for a client that sends an activation request
 * (tpm-ek) a credential for its AK, which its document must then prove it activated. Attest: the
 * document for that nonce; its outcome is the connection's, for good.
 */
function addChallengeService(
  server: grpc.Server,
  connections: Map<string, Connection>,
  opts: AttestedClientListenerOptions,
): void {
  const { challenges, validators } = opts
  const connectionOf = (call: grpc.ServerUnaryCall<Buffer, Buffer>, reply: Reply) => {
    const connection = connections.get(call.getPeer())
    if (!connection) refuse(reply, grpc.status.UNAUTHENTICATED, 'this connection is closing')
    return connection
  }
  server.addService(ChallengeService, {
    issue: (call: grpc.ServerUnaryCall<Buffer, Buffer>, reply: Reply) => {
      const connection = connectionOf(call, reply)
      if (!connection) return
      if (connection.challenged)
        return refuse(
          reply,
          grpc.status.FAILED_PRECONDITION,
          'this connection has had its challenge; a connection attests once',
        )
      connection.challenged = true
      if (call.request.length === 0) return reply(null, (connection.nonce = challenges.issue()))
      const validator = validators.find((v) => v.challengeActivation)
      if (!validator?.challengeActivation)
        return reply({
          code: grpc.status.INVALID_ARGUMENT,
          details: 'this server takes no activation request',
        })
      validator.challengeActivation(call.request).then(
        ({ made, expected }) => {
          try {
            connection.nonce = challenges.issue(expected, peerAddress(call.getPeer()))
          } catch (err) {
            const code =
              err instanceof ChallengeLimitError ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.INTERNAL
            return reply({ code, details: err instanceof Error ? err.message : String(err) })
          }
          reply(null, Buffer.concat([connection.nonce, encodeCredential(made)]))
        },
        (err: unknown) => {
          const reason = err instanceof Error ? err.message : String(err)
          opts.onRefusedAttestation?.(call.getPeer(), 'Challenge', reason)
          refuse(reply, grpc.status.PERMISSION_DENIED, reason)
        },
      )
    },
    attest: (call: grpc.ServerUnaryCall<Buffer, Buffer>, reply: Reply) => {
      const connection = connectionOf(call, reply)
      if (!connection) return
      const peer = call.getPeer()
      const nonce = connection.nonce
      connection.nonce = undefined // one answer per challenge, right or wrong
      if (connection.outcome?.ok === false)
        return refuse(reply, grpc.status.UNAUTHENTICATED, connection.outcome.reason)
      if (!nonce)
        return refuse(
          reply,
          grpc.status.UNAUTHENTICATED,
          'no challenge is open on this connection: call Issue first, on the same connection',
        )
      verifyClient(call.request, nonce, connection.binding, opts).then(
        (result) => {
          connection.outcome = { ok: true, result }
          opts.onVerified?.(result, peer)
          reply(null, Buffer.alloc(0))
        },
        (err: unknown) => {
          const reason = err instanceof Error ? err.message : String(err)
          opts.log?.warn('Refusing unattested client', { peer, error: reason })
          opts.onRefusedAttestation?.(peer, 'Attest', reason)
          connection.outcome = { ok: false, reason }
          refuse(reply, grpc.status.UNAUTHENTICATED, reason)
        },
      )
    },
  })
}

/** The document of an Attest call: for this connection's nonce, and bound to this connection's TLS session. */
async function verifyClient(
  request: Buffer,
  nonce: Buffer,
  binding: Buffer,
  opts: AttestedClientListenerOptions,
): Promise<ValidationResult> {
  const { oid, document } = decodeAttestation(request)
  const validator = opts.validators.find((v) => v.oid === oid)
  if (!validator) {
    const want = opts.validators.map((v) => `${v.oid} (${v.variant})`).join(', ')
    throw new AttestationError(`unknown OID: the document is for ${oid}; this server validates ${want}`)
  }
  const issued = opts.challenges.open(nonce)
  if (!issued) throw new AttestationError('the challenge of this connection expired before its answer came')
  opts.challenges.spend(nonce)
  const result = await validator.validate(document, nonce, issued.expected)
  if (!result.userData.equals(binding))
    throw new AttestationError(
      'the document is bound to another TLS session: a document counts only on the connection it was made for (replay or relay)',
    )
  // tpm-ek's quote counts only once the node proved in the document that it activated a credential
  if (result.activation && !result.activation.proven)
    throw new AttestationError(
      `${validator.variant}: the document counts only with a credential activation, which this node did not ask for at Issue`,
    )
  return result
}
