/**
 * A raw TLS peer (no HTTP/2 behind it) that attests itself with the product's attested certificate
 * for the client's SNI nonce and counts the application bytes the client sends: the observable for
 * "no application data before verification". With `clientCheck` it also requests a client
 * certificate and checks it as the join listener does (CN = a challenge nonce, consumed once, then
 * verifyAttestedCertificate); the product has no mutual listener yet, so this assembles one from
 * the product's parts. A refused client's bytes are never read, only its refusal is recorded.
 */
import { once } from 'node:events'
import { createSecureContext, createServer as createTlsServer, type TLSSocket } from 'node:tls'
import type { Issuer, Validator } from '../../src/lib/attestation/index.js'
import { type ChallengeRegistry } from '../../src/lib/atls/index.js'
import { createAttestedCertificate, verifyAttestedCertificate } from '../../src/lib/atls/certificate.js'
import { decodeNonce } from '../../src/lib/atls/nonce.js'

export interface RawAttestedPeer {
  port: number
  /** Application bytes read from clients this peer accepted. */
  readonly received: number
  /** Why each refused client was refused. */
  readonly refusals: string[]
  /** Resolves on the first application byte. */
  firstBytes: Promise<void>
  /** Hangs up on every client (the peer never answers HTTP/2) and stops listening. */
  close(): Promise<void>
}

export interface ClientCheck {
  validators: Validator[]
  challenges: ChallengeRegistry
}

export async function startRawAttestedPeer(
  issuer: Issuer,
  clientCheck?: ClientCheck,
): Promise<RawAttestedPeer> {
  const sockets = new Set<TLSSocket>()
  const refusals: string[] = []
  let received = 0
  let gotBytes = () => {}
  const firstBytes = new Promise<void>((resolve) => (gotBytes = resolve))
  const server = createTlsServer(
    {
      SNICallback: (name, done) => {
        createAttestedCertificate(issuer, Buffer.from(name, 'base64')).then(
          ({ certPem, keyPem }) => done(null, createSecureContext({ cert: certPem, key: keyPem })),
          (err: Error) => done(err),
        )
      },
      ALPNProtocols: ['h2'],
      requestCert: clientCheck !== undefined,
      rejectUnauthorized: false,
    },
    (socket: TLSSocket) => {
      sockets.add(socket)
      socket.once('close', () => sockets.delete(socket))
      socket.on('error', () => {})
      socket.pause()
      const accept = () => {
        socket.on('data', (d: Buffer) => {
          received += d.length
          gotBytes()
        })
        socket.resume()
      }
      if (!clientCheck) return accept()
      checkClient(socket, clientCheck).then(accept, (err: unknown) => {
        refusals.push(err instanceof Error ? err.message : String(err))
        socket.destroy()
      })
    },
  )
  server.on('tlsClientError', () => {})
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    get received() {
      return received
    },
    refusals,
    firstBytes,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

async function checkClient(socket: TLSSocket, check: ClientCheck): Promise<void> {
  const cert = socket.getPeerCertificate(true)
  if (!cert?.raw) throw new Error('client presented no certificate')
  const nonce = decodeNonce(cert.subject?.CN as string | undefined, 'client certificate subject CN')
  if (!check.challenges.consume(nonce))
    throw new Error('client nonce was not issued, expired, or already used')
  await verifyAttestedCertificate(cert.raw, check.validators, nonce)
}
