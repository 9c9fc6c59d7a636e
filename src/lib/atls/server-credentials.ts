/** grpc-js server credentials for server-attested aTLS: a fresh attested certificate per client nonce. */
import { createSecureContext, type SecureContext } from 'node:tls'
import { ServerCredentials, type Server } from '@grpc/grpc-js'
import type { Issuer } from '../attestation/index.js'
import type { CredentialsWithServices } from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { addActivationService } from './activation.js'
import { createAttestedCertificate } from './certificate.js'
import { decodeNonce } from './nonce.js'

export interface AttestedServerOptions {
  issuer: Issuer
  log?: Logger
  /** A connection whose TLS handshake (the node's quote included) is not done by then is closed. */
  handshakeTimeoutMs?: number
}

/**
 * How long a server gives a client to finish its TLS handshake: a TPM quote queued behind a bounded
 * number of others fits; a peer that connects and says nothing is gone after it (Node's default:
 * 120 s).
 */
export const SERVER_HANDSHAKE_TIMEOUT_MS = 10_000

class AttestedServerCredentials extends ServerCredentials implements CredentialsWithServices {
  constructor(private readonly opts: AttestedServerOptions) {
    // The nonce arrives as the SNI server name because TLS gives the client no other field that
    // reaches the server before it picks a certificate; each handshake gets its own key and quote.
    const SNICallback = (servername: string, done: (err: Error | null, ctx?: SecureContext) => void) => {
      attestedContext(opts.issuer, servername).then(
        (ctx) => done(null, ctx),
        (err: unknown) => {
          opts.log?.warn('Refusing aTLS handshake', {
            error: err instanceof Error ? err.message : String(err),
          })
          done(err instanceof Error ? err : new Error(String(err)))
        },
      )
    }
    // handshakeTimeout: the http2 secure server destroys a socket whose handshake timed out
    const handshakeTimeout = opts.handshakeTimeoutMs ?? SERVER_HANDSHAKE_TIMEOUT_MS
    super({ SNICallback, minVersion: 'TLSv1.2', handshakeTimeout }, {})
  }
  override _equals(other: ServerCredentials): boolean {
    return other === this
  }
  /** tpm-ek: the activation clients ask for after the handshake (listenOn adds it). */
  addServicesTo(server: Server): void {
    addActivationService(server, this.opts.issuer, this.opts.log)
  }
}

async function attestedContext(issuer: Issuer, servername: string): Promise<SecureContext> {
  const nonce = decodeNonce(servername, 'TLS server name (SNI)')
  const { certPem, keyPem } = await createAttestedCertificate(issuer, nonce)
  // No CA: init clients present no certificate; `ca: []` also spares building Node's root store.
  return createSecureContext({ cert: certPem, key: keyPem, ca: [], minVersion: 'TLSv1.2' })
}

/** Server-attested aTLS (init direction): per-handshake cert with the attestation for the client's SNI nonce. */
export function createAttestedServerCredentials(opts: AttestedServerOptions): ServerCredentials {
  return new AttestedServerCredentials(opts)
}
