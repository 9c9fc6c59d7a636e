/**
 * Attested certificates: a fresh ECDSA P-256 key per handshake, a self-signed certificate valid for
 * now ± 2 h that carries the attestation document under the variant's OID, bound to the key by
 * userData = SHA256(DER SubjectPublicKeyInfo). Keys, signatures and the signature check are
 * node:crypto; the certificate structure is the x509 module's.
 */
import { createHash, generateKeyPair, X509Certificate, type KeyObject } from 'node:crypto'
import { promisify } from 'node:util'
import type {
  ActivationExpectation,
  ActivationTarget,
  Issuer,
  ValidationResult,
  Validator,
} from '../attestation/index.js'
import { AttestationError } from '../attestation/index.js'
import type * as X509 from '../x509/index.js'
import type { CertificateView } from '../x509/index.js'

/**
 * The X.509 encoder (asn1 schemas: ~40 ms and ~5-8 MB to load) is loaded apart from the rest:
 * commands that never touch certificates skip it, clients call preloadX509() as they connect (it
 * loads while the server produces its attestation), servers prepareCertificateEncoder() once they
 * listen.
 */
export const preloadX509 = (): Promise<X509Module> => (x509Module ??= import('../x509/index.js'))
type X509Module = typeof X509
// One import() for the process: each call of import() resolves the specifier again (under a loader
// hook such as tsx's, a round trip to the loader thread, ~1 ms), and this runs on every handshake.
let x509Module: Promise<X509Module> | undefined

/**
 * For servers: loads the encoder and encodes one throwaway certificate, whose DER it returns. The
 * first encode fills asn1-schema's per-class schema cache and compiles the encoder (~30 ms), which
 * would otherwise be spent inside the first handshake.
 */
export async function prepareCertificateEncoder(): Promise<Buffer> {
  return (await createAttestedCertificate(undefined, Buffer.alloc(32))).der
}

export const CERT_VALIDITY_SLACK_MS = 2 * 60 * 60 * 1000
const COMMON_NAME = 'Constellation'
// node:crypto's own, not the x509 module's: the key and the quote must not wait for the encoder to load
const generateEcKeyPair = promisify(generateKeyPair)

export interface AttestedCertificate {
  certPem: string
  keyPem: string
  der: Buffer
}

export const userDataOf = (spkiDer: Uint8Array): Buffer => createHash('sha256').update(spkiDer).digest()

const spkiOf = (key: KeyObject): Buffer => key.export({ type: 'spki', format: 'der' })

/** Self-signed certificate whose extension holds issuer.issue(SHA256(SPKI), nonce); without an issuer, a plain one. */
export async function createAttestedCertificate(
  issuer: Issuer | undefined,
  nonce: Buffer,
  now = new Date(),
  commonName = COMMON_NAME,
): Promise<AttestedCertificate> {
  const x509 = preloadX509() // loads while the TPM quotes
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' })
  const document = issuer ? await issuer.issue(userDataOf(spkiOf(publicKey)), nonce) : undefined
  const { distinguishedName, pemOfSigned, randomSerialNumber, signCertificate } = await x509
  const name = distinguishedName([['CN', commonName]])
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(now.getTime() - CERT_VALIDITY_SLACK_MS),
      notAfter: new Date(now.getTime() + CERT_VALIDITY_SLACK_MS),
      publicKey,
      extensions: issuer && document ? [{ oid: issuer.oid, critical: false, value: document }] : [],
    },
    privateKey,
  )
  return {
    certPem: pemOfSigned(der),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    der,
  }
}

export interface VerifyOptions {
  /** The time the certificate's validity is checked at. */
  now?: Date
  /** The join direction's activation challenge for this nonce (tpm-ek), when the client asked for one. */
  expected?: ActivationExpectation
  /** Has the peer activate a credential for this target (server-attested tpm-ek); rejects when it cannot. */
  activate?: (target: ActivationTarget) => Promise<void>
}

/** A peer's certificate, decoded once: node:crypto's view (signature, key) and the fields we read. */
export interface PeerCertificate {
  der: Buffer
  cert: X509Certificate
  fields: CertificateView
}

/**
 * Decodes a peer's certificate for verifyAttestedCertificate; refuses anything that is not exactly
 * DER X.509. Given the X509Certificate a TLS socket already decoded (getPeerX509Certificate), it
 * is not decoded by node:crypto again: OpenSSL refuses a certificate message whose DER does not
 * fill it exactly, so `raw` is the bytes the peer sent.
 */
export async function readPeerCertificate(peer: Buffer | X509Certificate): Promise<PeerCertificate> {
  const { readCertificateView } = await preloadX509()
  const der = Buffer.isBuffer(peer) ? peer : peer.raw
  let cert: X509Certificate
  let fields: CertificateView
  try {
    cert = Buffer.isBuffer(peer) ? new X509Certificate(der) : peer
    fields = readCertificateView(der)
  } catch (cause: unknown) {
    throw new AttestationError('peer certificate is not valid DER X.509', { cause })
  }
  // node:crypto re-encodes the parsed certificate, so a length difference means bytes DER does not cover
  if (cert.raw.length !== der.length)
    throw new AttestationError('peer certificate has bytes outside its DER encoding')
  return { der, cert, fields }
}

/**
 * Checks a peer's attested certificate (DER, or as readPeerCertificate decoded it): self-signature,
 * validity window, an extension for one of the validators' OIDs validated with our nonce, and
 * userData = SHA256(the certificate's SPKI).
 */
export async function verifyAttestedCertificate(
  peer: Buffer | PeerCertificate,
  validators: readonly Validator[],
  nonce: Buffer,
  opts: VerifyOptions = {},
): Promise<ValidationResult> {
  const now = opts.now ?? new Date()
  const { cert, fields } = Buffer.isBuffer(peer) ? await readPeerCertificate(peer) : peer
  if (!isSelfSigned(cert)) throw new AttestationError('peer certificate is not correctly self-signed')
  const { notBefore, notAfter, extensions } = fields
  if (now.getTime() < notBefore.getTime() || now.getTime() > notAfter.getTime())
    throw new AttestationError(
      `peer certificate expired or not yet valid (valid ${notBefore.toISOString()} to ${notAfter.toISOString()}, now ${now.toISOString()})`,
    )
  for (const ext of extensions) {
    const validator = validators.find((v) => v.oid === ext.oid)
    if (!validator) continue
    const result = await validator.validate(ext.value, nonce, opts.expected)
    // the SPKI bytes the certificate carries, which its key and signature come from: hashing them
    // as they are spares an export of the key (OpenSSL 3: ~0.1 ms) and any re-encoding
    if (!result.userData.equals(userDataOf(fields.subjectPublicKeyInfo)))
      throw new AttestationError(
        'certificate hash does not match user data: the certificate key is not the attested key',
      )
    // tpm-ek's quote counts only once the peer has activated a credential for its EK and AK: in
    // the document (join direction, `expected`) or right now (`activate`); otherwise fail closed
    if (result.activation && !result.activation.proven) {
      if (!opts.activate)
        throw new AttestationError(
          `${validator.variant}: the peer's attestation counts only after credential activation, which this connection does not perform`,
        )
      await opts.activate(result.activation)
      return { ...result, activation: { ...result.activation, proven: true } }
    }
    return result
  }
  const found = extensions.map((e) => e.oid).join(', ') || 'none'
  const want = validators.map((v) => `${v.oid} (${v.variant})`).join(', ')
  throw new AttestationError(
    `unknown OID: no attestation extension for ${want}; certificate extensions: ${found}`,
  )
}

/** OpenSSL's check of the signature (and that both signature algorithm fields agree) with the certificate's own key. */
function isSelfSigned(cert: X509Certificate): boolean {
  try {
    return cert.verify(cert.publicKey)
  } catch {
    return false
  }
}
