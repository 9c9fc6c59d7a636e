/** Certificates: fields encoded as an RFC 5280 TBSCertificate, signed with SHA-256 by node:crypto. */
import { randomBytes, X509Certificate, type KeyObject } from 'node:crypto'
import { AsnConvert, OctetString } from '@peculiar/asn1-schema'
import {
  type AlgorithmIdentifier,
  Certificate,
  Extension,
  Extensions,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
  type Name,
} from '@peculiar/asn1-x509'
import { algorithmFor, signWith, type SignatureScheme } from './signature-scheme.js'

export interface CertificateExtension {
  oid: string
  critical: boolean
  /** The DER that extnValue's OCTET STRING wraps. */
  value: Uint8Array
}

export interface CertificateFields {
  /** Positive, minimally encoded, at most 20 bytes (RFC 5280 §4.1.2.2): see randomSerialNumber. */
  serialNumber: Buffer
  subject: Name
  issuer: Name
  notBefore: Date
  notAfter: Date
  /** The certified key, or its DER SubjectPublicKeyInfo as node:crypto exports it (spares a re-export). */
  publicKey: KeyObject | Buffer
  extensions: readonly CertificateExtension[]
}

/**
 * Encodes the fields as a TBSCertificate, signs it (SHA-256 unless the scheme says otherwise) and
 * returns the certificate's DER. The TBSCertificate is encoded once: the signed bytes are framed
 * as they are, not re-encoded from the schema (which cost as much again on every join).
 */
export function signCertificate(
  fields: CertificateFields,
  signingKey: KeyObject,
  scheme: SignatureScheme = 'sha256',
): Buffer {
  const algorithm = algorithmFor(signingKey, scheme)
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: toArrayBuffer(fields.serialNumber),
    signature: algorithm,
    issuer: fields.issuer,
    validity: new Validity({ notBefore: fields.notBefore, notAfter: fields.notAfter }),
    subject: fields.subject,
    subjectPublicKeyInfo: AsnConvert.parse(
      Buffer.isBuffer(fields.publicKey)
        ? fields.publicKey
        : fields.publicKey.export({ type: 'spki', format: 'der' }),
      SubjectPublicKeyInfo,
    ),
    // "extensions" is SEQUENCE SIZE (1..MAX): absent rather than empty
    extensions: fields.extensions.length > 0 ? new Extensions(fields.extensions.map(toExtension)) : undefined,
  })
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs))
  // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }
  return derSequence(
    tbsDer,
    Buffer.from(AsnConvert.serialize(algorithm)),
    derBitString(signWith(scheme, tbsDer, signingKey)),
  )
}

/** X.690 §8.9: a SEQUENCE around elements that are DER already. */
function derSequence(...elements: Buffer[]): Buffer {
  const content = Buffer.concat(elements)
  return Buffer.concat([Buffer.from([0x30]), derLength(content.length), content])
}

/** X.690 §8.6: a BIT STRING of whole bytes (no unused bits). */
function derBitString(bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0x03]), derLength(bytes.length + 1), Buffer.from([0]), bytes])
}

/** X.690 §8.1.3: definite length, short form below 128, else the fewest big-endian octets. */
function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length])
  const octets: number[] = []
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) octets.unshift(rest & 0xff)
  return Buffer.from([0x80 | octets.length, ...octets])
}

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
