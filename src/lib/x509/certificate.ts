/** Certificates: fields encoded as an RFC 5280 TBSCertificate, signed with SHA-256 by node:crypto. */
import { randomBytes, X509Certificate, type KeyObject } from 'node:crypto'
import { AsnConvert, OctetString } from '@peculiar/asn1-schema'
import { type AlgorithmIdentifier, Certificate, Extension, type Name } from '@peculiar/asn1-x509'
import { algorithmFor, signWith, type SignatureScheme } from './signature-scheme.js'
import { derElement, encodeTbsCertificate } from './tbs-certificate.js'

export interface CertificateExtension {
  oid: string
  critical: boolean
  /** The DER that extnValue's OCTET STRING wraps. */
  value: Uint8Array
}

export interface CertificateFields {
  /** Positive, minimally encoded, at most 20 bytes (RFC 5280 §4.1.2.2): see randomSerialNumber. */
  serialNumber: Buffer
  /** A Name, or its DER (a signer that names the same issuer every time encodes it once). */
  subject: Name | Buffer
  issuer: Name | Buffer
  notBefore: Date
  notAfter: Date
  /** The certified key, or its DER SubjectPublicKeyInfo as node:crypto exports it (spares a re-export). */
  publicKey: KeyObject | Buffer
  extensions: readonly CertificateExtension[]
}

/**
 * Encodes the fields as a TBSCertificate (tbs-certificate.ts), signs it (SHA-256 unless the scheme
 * says otherwise) and returns the certificate's DER, the signed bytes framed as they are.
 */
export function signCertificate(
  fields: CertificateFields,
  signingKey: KeyObject,
  scheme: SignatureScheme = 'sha256',
): Buffer {
  const algorithm = algorithmDer(signingKey, scheme)
  const tbsDer = encodeTbsCertificate({
    serialNumber: fields.serialNumber,
    signature: algorithm,
    issuer: nameDer(fields.issuer),
    subject: nameDer(fields.subject),
    notBefore: fields.notBefore,
    notAfter: fields.notAfter,
    subjectPublicKeyInfo: Buffer.isBuffer(fields.publicKey)
      ? fields.publicKey
      : fields.publicKey.export({ type: 'spki', format: 'der' }),
    extensions: fields.extensions,
  })
  // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }
  const signature = signWith(scheme, tbsDer, signingKey)
  // the signature as a BIT STRING of whole bytes: no unused bits
  return derElement(0x30, tbsDer, algorithm, derElement(0x03, Buffer.from([0]), signature))
}

/** Per signing key: a CA signs one certificate per join, and the key's algorithm never changes. */
const algorithmDers = new WeakMap<KeyObject, Map<SignatureScheme, Buffer>>()

function algorithmDer(key: KeyObject, scheme: SignatureScheme): Buffer {
  let ders = algorithmDers.get(key)
  if (!ders) algorithmDers.set(key, (ders = new Map()))
  let der = ders.get(scheme)
  if (!der) ders.set(scheme, (der = Buffer.from(AsnConvert.serialize(algorithmFor(key, scheme)))))
  return der
}

const nameDer = (name: Name | Buffer): Buffer =>
  Buffer.isBuffer(name) ? name : Buffer.from(AsnConvert.serialize(name))

/**
 * The certificate's ASN.1 structure, from DER bytes or a PEM string; throws on anything that is
 * not a Certificate. Its subject, reused as another certificate's issuer, keeps its encoding.
 */
export function parseCertificate(cert: Uint8Array | string): Certificate {
  return AsnConvert.parse(typeof cert === 'string' ? new X509Certificate(cert).raw : cert, Certificate)
}

/** 126 random bits; the first byte is 0x40–0x7f, so the INTEGER is positive and minimally encoded as DER requires. */
export function randomSerialNumber(): Buffer {
  const bytes = randomBytes(16)
  bytes[0] = ((bytes[0] ?? 0) & 0x3f) | 0x40
  return bytes
}

/** The certificate's PEM; throws unless `der` is a certificate node:crypto can read. */
export const toPem = (der: Buffer): string => new X509Certificate(der).toString()

/**
 * RFC 7468 PEM of a certificate this process just encoded (signCertificate's output), byte for byte
 * what toPem gives, without decoding it again: with OpenSSL 3 that decode, key included, cost more
 * than the join service's whole kubelet signature.
 */
export function pemOfSigned(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? []
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`
}

export const toExtension = (e: CertificateExtension): Extension =>
  new Extension({ extnID: e.oid, critical: e.critical, extnValue: new OctetString(e.value) })

/** The SHA-256 signature algorithm for the key (certificates and requests alike). */
export const signatureAlgorithm = (key: KeyObject): AlgorithmIdentifier => algorithmFor(key, 'sha256')

export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

/**
 * Every extension of a certificate by OID, with the DER its extnValue OCTET STRING wraps; throws on
 * anything that is not a Certificate and on an OID that occurs twice (RFC 5280 §4.2 forbids it).
 */
export function certificateExtensions(cert: Uint8Array | string): Map<string, Buffer> {
  const out = new Map<string, Buffer>()
  for (const ext of parseCertificate(cert).tbsCertificate.extensions ?? []) {
    if (out.has(ext.extnID)) throw new Error(`extension ${ext.extnID} occurs more than once`)
    out.set(ext.extnID, Buffer.from(ext.extnValue.buffer))
  }
  return out
}
