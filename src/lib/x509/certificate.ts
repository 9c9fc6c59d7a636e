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
  publicKey: KeyObject
  extensions: readonly CertificateExtension[]
}

/**
 * Encodes the fields as a TBSCertificate, signs it (SHA-256 unless the scheme says otherwise) and
 * returns the certificate's DER.
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
      fields.publicKey.export({ type: 'spki', format: 'der' }),
      SubjectPublicKeyInfo,
    ),
    // "extensions" is SEQUENCE SIZE (1..MAX): absent rather than empty
    extensions: fields.extensions.length > 0 ? new Extensions(fields.extensions.map(toExtension)) : undefined,
  })
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs))
  const cert = new Certificate({
    tbsCertificate: tbs,
    signatureAlgorithm: algorithm,
    signatureValue: toArrayBuffer(signWith(scheme, tbsDer, signingKey)),
  })
  return Buffer.from(AsnConvert.serialize(cert))
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

export const toPem = (der: Buffer): string => new X509Certificate(der).toString()

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
