/**
 * grpc-js channel credentials that verify the server's attestation inside connect(): grpc-js starts
 * HTTP/2 (its first application bytes) only after connect() resolves, so nothing is sent to an
 * unverified peer.
 */
import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { connect as tlsConnect, createSecureContext, type SecureContext, type TLSSocket } from 'node:tls'
import {
  CallCredentials,
  ChannelCredentials,
  makeGenericClientConstructor,
  type experimental,
} from '@grpc/grpc-js'
import type { ValidationResult, Validator } from '../attestation/index.js'
import { callRaw } from '../grpc/index.js'
import { formatHostPort } from '../system/index.js'
import { ACTIVATE_PATH, ActivationService, proveActivation } from './activation.js'
import { preloadX509, verifyAttestedCertificate } from './certificate.js'
import { refusal } from './failure.js'
import { encodeNonce, NONCE_BYTES } from './nonce.js'

export interface AttestedChannelOptions {
  validators: Validator[]
  onVerified?: (r: ValidationResult) => void
  /** Client certificate for mutual aTLS (join direction). */
  clientCertificate?: { certPem: string; keyPem: string }
  /** The nonce for the server to attest; default: fresh random per handshake (never reuse one). */
  nonce?: () => Buffer
  /** Bound on TLS handshake plus attestation check; the socket is destroyed when it passes. */
  handshakeTimeoutMs?: number
}

/** Constellation's validators get 30 s per attestation; a peer that says nothing gets no longer. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 30_000

type SecureConnector = experimental.SecureConnector
type SecureConnectResult = experimental.SecureConnectResult

/** How a connection's TLS is set up and, before grpc-js may use it, checked. */
type Handshake = (socket: Socket) => Promise<SecureConnectResult>

class HandshakeChannelCredentials extends ChannelCredentials {
  /** Handshakes in flight, destroyed when grpc-js drops the connector (channel closed). */
  private readonly pending = new Set<Socket>()
  constructor(
    private readonly handshake: Handshake,
    /** Where connections must leave from (see targetLeavingFrom); any address without. */
    private readonly localAddress?: string,
  ) {
    super()
  }
  _isSecure(): boolean {
    return true
  }
  _equals(other: ChannelCredentials): boolean {
    return other === this
  }
  _createSecureConnector(
    _target: unknown,
    _options: unknown,
    callCredentials?: CallCredentials,
  ): SecureConnector {
    const creds = callCredentials ?? CallCredentials.createEmpty()
    return {
      connect: (socket) => {
        const leftFrom = socket.localAddress
        if (this.localAddress && leftFrom !== this.localAddress) {
          // the channel's target did not come from targetLeavingFrom: the peer would take this
          // connection for another node's
          socket.destroy()
          return Promise.reject(
            new Error(
              `the connection left from ${leftFrom}, not ${this.localAddress}: dial targetLeavingFrom(target, localAddress)`,
            ),
          )
        }
        this.pending.add(socket)
        return this.handshake(socket).finally(() => this.pending.delete(socket))
      },
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => creds,
      destroy: () => {
        for (const socket of this.pending) socket.destroy()
        this.pending.clear()
      },
    }
  }
}

/** Each handshake uses a fresh nonce: a config reused across connections would allow replays. */
function attestedConnect(socket: Socket, opts: AttestedChannelOptions): Promise<SecureConnectResult> {
  const nonce = opts.nonce?.() ?? randomBytes(NONCE_BYTES)
  void preloadX509().catch(() => {}) // verifyAttestedCertificate reports a load failure
  return tlsHandshake(socket, {
    servername: encodeNonce(nonce),
    clientCertificate: opts.clientCertificate,
    timeoutMs: opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
    check: async (tls) => {
      const der = tls.getPeerCertificate(true).raw
      if (!der) throw refusal(new Error('server sent no certificate'))
      let result: ValidationResult
      try {
        result = await verifyAttestedCertificate(der, opts.validators, nonce, {
          activate: (target) =>
            proveActivation(target, (request) =>
              activateOnSecondConnection(
                socket,
                request,
                opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
              ),
            ),
        })
      } catch (err) {
        throw refusal(err)
      }
      opts.onVerified?.(result)
    },
  })
}

interface HandshakeOptions {
  servername: string
  clientCertificate?: { certPem: string; keyPem: string }
  timeoutMs: number
  minVersion?: 'TLSv1.2' | 'TLSv1.3'
  /** Runs after the TLS handshake; grpc-js gets the connection only once it resolves. */
  check?: (tls: TLSSocket) => Promise<void>
}

/**
 * One context per TLS floor for every connection that presents no certificate: it holds settings
 * only (no key, no trusted CA, no session), and OpenSSL 3 takes about 0.15 ms of CPU to make one;
 * a join's connection is made with one.
 */
const plainContexts = new Map<string, SecureContext>()
function contextWithoutCertificate(minVersion: 'TLSv1.2' | 'TLSv1.3'): SecureContext {
  let context = plainContexts.get(minVersion)
  if (!context) plainContexts.set(minVersion, (context = createSecureContext({ ca: [], minVersion })))
  return context
}

function tlsHandshake(socket: Socket, opts: HandshakeOptions): Promise<SecureConnectResult> {
  const peer = `${socket.remoteAddress}:${socket.remotePort}`
  return new Promise((resolve, reject) => {
    const tls: TLSSocket = tlsConnect({
      socket,
      servername: opts.servername,
      ALPNProtocols: ['h2'],
      minVersion: opts.minVersion ?? 'TLSv1.2',
      // the peer is self-signed by design; trust comes from attestation, so no CA is trusted (and
      // Node builds no root store: ~40 ms per connection, far more with a large extra CA bundle)
      rejectUnauthorized: false,
      ...(opts.clientCertificate
        ? { ca: [], cert: opts.clientCertificate.certPem, key: opts.clientCertificate.keyPem }
        : { secureContext: contextWithoutCertificate(opts.minVersion ?? 'TLSv1.2') }),
    })
    const fail = (err: unknown) => {
      clearTimeout(timer)
      tls.destroy()
      socket.destroy()
      reject(err)
    }
    // A peer that accepts and never answers would otherwise hold the socket (and the CLI) forever.
    const timer = setTimeout(
      () => fail(new Error(`no TLS handshake from ${peer} within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    )
    tls.once('error', fail)
    tls.once('secureConnect', () => {
      ;(opts.check?.(tls) ?? Promise.resolve()).then(() => {
        if (tls.destroyed) return // timed out meanwhile: already rejected
        clearTimeout(timer)
        tls.off('error', fail)
        resolve({ socket: tls, secure: true })
      }, fail)
    })
  })
}

/** Client side: verifies the server's attestation inside the handshake; no application data before it passes. */
export function createAttestedChannelCredentials(opts: AttestedChannelOptions): ChannelCredentials {
  return new HandshakeChannelCredentials((socket) => attestedConnect(socket, opts))
}

/**
 * Client side of the join direction, where the server is not attested (as in Constellation): TLS 1.3
 * with no CA trusted and a fixed server name (not the IP address); `onSecure` sees each connection
 * once its handshake is done, before grpc-js uses it. grpc-js' own SSL credentials would load the
 * default CA bundle into every connection.
 */
export function createUnattestedServerCredentials(
  opts: {
    handshakeTimeoutMs?: number
    /** The address connections must leave from (the node's own, on a shared host); any without. */
    localAddress?: string
    onSecure?: (tls: TLSSocket) => void
  } = {},
): ChannelCredentials {
  return new HandshakeChannelCredentials(
    (socket) =>
      tlsHandshake(socket, {
        servername: UNATTESTED_SERVER_NAME,
        timeoutMs: opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
        // the join direction binds its attestation to the session's exporter: unique from TLS 1.3 on
        minVersion: 'TLSv1.3',
        check: (tls) => Promise.resolve(opts.onSecure?.(tls)),
      }),
    opts.localAddress,
  )
}

/** The name a join-direction client sends as SNI instead of the join service's address. */
export const UNATTESTED_SERVER_NAME = 'constellation'

/**
 * The Activate call on a connection of its own to the same address (the first one is grpc-js'
 * once the handshake resolves). Its server certificate is not checked: the answer proves by
 * itself that the TPM of the first certificate's EK and AK unwrapped the credential.
 */
async function activateOnSecondConnection(
  first: Socket,
  request: Buffer,
  timeoutMs: number,
): Promise<Buffer> {
  const target = formatHostPort(first.remoteAddress ?? '', first.remotePort ?? 0)
  const credentials = new HandshakeChannelCredentials((socket) =>
    tlsHandshake(socket, { servername: encodeNonce(randomBytes(NONCE_BYTES)), timeoutMs }),
  )
  const client = new (makeGenericClientConstructor(ActivationService, 'activation'))(target, credentials)
  try {
    return await callRaw(client, ACTIVATE_PATH, request, timeoutMs)
  } finally {
    client.close()
  }
}
