/**
 * Attested certificates: a fresh ECDSA P-256 key per handshake, a self-signed certificate valid for
 * now ± 2 h that carries the attestation document under the variant's OID, bound to the key by
 * userData = SHA256(DER SubjectPublicKeyInfo). Encoding and signing are @peculiar/x509 + WebCrypto.
 */
import { createHash, randomBytes, webcrypto, X509Certificate } from 'node:crypto'
// @peculiar/x509 resolves its algorithm providers through tsyringe, which needs the Reflect polyfill
import 'reflect-metadata'
import * as x509 from '@peculiar/x509'
import type { Issuer, ValidationResult, Validator } from '../attestation/index.js'
import { AttestationError } from '../attestation/index.js'

// node's webcrypto implements the DOM Crypto interface; the cast only bridges the two type declarations
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])

type SelfSignedParams = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]

export const CERT_VALIDITY_SLACK_MS = 2 * 60 * 60 * 1000
const SUBJECT = 'CN=Constellation'
const EC_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const

export interface AttestedCertificate {
  certPem: string
  keyPem: string
  der: Buffer
}

export const userDataOf = (spkiDer: Uint8Array): Buffer => createHash('sha256').update(spkiDer).digest()

/** Self-signed certificate whose extension holds issuer.issue(SHA256(SPKI), nonce); without an issuer, a plain one. */
export async function createAttestedCertificate(
  issuer: Issuer | undefined,
  nonce: Buffer,
  now = new Date(),
  subject: SelfSignedParams['name'] = SUBJECT,
): Promise<AttestedCertificate> {
  const keys = await webcrypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify'])
  const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey))
  const document = issuer ? await issuer.issue(userDataOf(spki), nonce) : undefined
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: subject,
    notBefore: new Date(now.getTime() - CERT_VALIDITY_SLACK_MS),
    notAfter: new Date(now.getTime() + CERT_VALIDITY_SLACK_MS),
    signingAlgorithm: SIGNING,
    keys: keys as unknown as SelfSignedParams['keys'],
    extensions: issuer && document ? [new x509.Extension(issuer.oid, false, document)] : [],
  })
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  return {
    certPem: cert.toString('pem'),
    keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'),
    der: Buffer.from(cert.rawData),
  }
}

/**
 * Checks a peer's attested certificate: self-signature, validity window, an extension for one of
 * the validators' OIDs validated with our nonce, and userData = SHA256(the certificate's SPKI).
 */
export async function verifyAttestedCertificate(
  der: Buffer,
  validators: readonly Validator[],
  nonce: Buffer,
  now = new Date(),
): Promise<ValidationResult> {
  let cert: x509.X509Certificate
  try {
    cert = new x509.X509Certificate(der)
  } catch (cause: unknown) {
    throw new AttestationError('peer certificate is not valid DER X.509', { cause })
  }
  // node:crypto re-encodes the parsed certificate, so a length difference means bytes DER does not cover
  const encodedLength = (() => {
    try {
      return new X509Certificate(der).raw.length
    } catch {
      return -1
    }
  })()
  if (encodedLength !== der.length)
    throw new AttestationError('peer certificate has bytes outside its DER encoding')
  if (!(await cert.verify({ signatureOnly: true }).catch(() => false)))
    throw new AttestationError('peer certificate is not correctly self-signed')
  if (now < cert.notBefore || now > cert.notAfter)
    throw new AttestationError(
      `peer certificate expired or not yet valid (valid ${cert.notBefore.toISOString()} to ${cert.notAfter.toISOString()}, now ${now.toISOString()})`,
    )
  for (const ext of cert.extensions) {
    const validator = validators.find((v) => v.oid === ext.type)
    if (!validator) continue
    const document = Buffer.from(ext.value) // the extnValue OCTET STRING's content: the raw document
    const result = await validator.validate(document, nonce)
    if (!result.userData.equals(userDataOf(new Uint8Array(cert.publicKey.rawData))))
      throw new AttestationError(
        'certificate hash does not match user data: the certificate key is not the attested key',
      )
    return result
  }
  const found = cert.extensions.map((e) => e.type).join(', ') || 'none'
  const want = validators.map((v) => `${v.oid} (${v.variant})`).join(', ')
  throw new AttestationError(
    `unknown OID: no attestation extension for ${want}; certificate extensions: ${found}`,
  )
}

function serialNumber(): string {
  const bytes = randomBytes(16)
  bytes[0] = (bytes[0] ?? 0) & 0x7f // positive, < 2^127
  return bytes.toString('hex')
}
