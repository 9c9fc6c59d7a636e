/**
 * grpc-js channel credentials that verify the server's attestation inside connect(): grpc-js starts
 * HTTP/2 (its first application bytes) only after connect() resolves, so nothing is sent to an
 * unverified peer.
 */
import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { CallCredentials, ChannelCredentials, type experimental } from '@grpc/grpc-js'
import type { ValidationResult, Validator } from '../attestation/index.js'
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

class AttestedChannelCredentials extends ChannelCredentials {
  /** Handshakes in flight, destroyed when grpc-js drops the connector (channel closed). */
  private readonly pending = new Set<Socket>()
  constructor(private readonly opts: AttestedChannelOptions) {
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
        this.pending.add(socket)
        return attestedConnect(socket, this.opts).finally(() => this.pending.delete(socket))
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
  const timeoutMs = opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS
  const peer = `${socket.remoteAddress}:${socket.remotePort}`
  void preloadX509().catch(() => {}) // verifyAttestedCertificate reports a load failure
  return new Promise((resolve, reject) => {
    const tls: TLSSocket = tlsConnect({
      socket,
      servername: encodeNonce(nonce),
      ALPNProtocols: ['h2'],
      minVersion: 'TLSv1.2',
      // the peer is self-signed by design; trust comes from the attestation checked below, so no
      // CA is trusted (and Node skips building its root store: ~40 ms without NODE_EXTRA_CA_CERTS)
      rejectUnauthorized: false,
      ca: [],
      ...(opts.clientCertificate
        ? { cert: opts.clientCertificate.certPem, key: opts.clientCertificate.keyPem }
        : {}),
    })
    const fail = (err: unknown) => {
      clearTimeout(timer)
      tls.destroy()
      socket.destroy()
      reject(err)
    }
    // A peer that accepts and never answers would otherwise hold the socket (and the CLI) forever.
    const timer = setTimeout(
      () => fail(new Error(`no TLS handshake from ${peer} within ${timeoutMs} ms`)),
      timeoutMs,
    )
    tls.once('error', fail)
    tls.once('secureConnect', () => {
      const der = tls.getPeerCertificate(true).raw
      if (!der) return fail(refusal(new Error('server sent no certificate')))
      verifyAttestedCertificate(der, opts.validators, nonce).then(
        (result) => {
          if (tls.destroyed) return // timed out meanwhile: already rejected
          clearTimeout(timer)
          tls.off('error', fail)
          opts.onVerified?.(result)
          resolve({ socket: tls, secure: true })
        },
        (err: unknown) => fail(refusal(err)),
      )
    })
  })
}

/** Client side: verifies the server's attestation inside the handshake; no application data before it passes. */
export function createAttestedChannelCredentials(opts: AttestedChannelOptions): ChannelCredentials {
  return new AttestedChannelCredentials(opts)
}
