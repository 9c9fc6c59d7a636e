/**
 * RFC 5280 §4.1 TBSCertificate, encoded from its parts: the join service signs one kubelet
 * certificate per join, and asn1-schema's AsnConvert.serialize walks the whole schema to encode
 * one (about 0.5 ms here, 15 times the ECDSA signature). asn1js encodes each primitive (INTEGER,
 * times, OID, BOOLEAN, OCTET STRING); parts that arrive as DER (the algorithm, the names, the
 * SubjectPublicKeyInfo) are placed as they are, once their header says they are one element; the constructed
 * elements around them are framed as X.690 §8.9 says. test/x509/tbs-certificate.test.ts holds
 * the output to asn1-schema's, byte for byte.
 */
import * as asn1js from 'asn1js'
import type { CertificateExtension } from './certificate.js'
import { elementLength } from './der-tree.js'

export interface TbsFields {
  /** Positive and minimally encoded (randomSerialNumber). */
  serialNumber: Buffer
  /** DER AlgorithmIdentifier of the signature. */
  signature: Buffer
  /** DER Names. */
  issuer: Buffer
  subject: Buffer
  notBefore: Date
  notAfter: Date
  /** DER SubjectPublicKeyInfo. */
  subjectPublicKeyInfo: Buffer
  extensions: readonly CertificateExtension[]
}

const SEQUENCE = 0x30
const CONTEXT_CONSTRUCTED = 0xa0
const V3 = primitive(new asn1js.Integer({ value: 2 }))

export function encodeTbsCertificate(f: TbsFields): Buffer {
  const extensions =
    // "extensions" is SEQUENCE SIZE (1..MAX): absent rather than empty
    f.extensions.length > 0
      ? [derElement(CONTEXT_CONSTRUCTED | 3, derElement(SEQUENCE, ...f.extensions.map(extension)))]
      : []
  return derElement(
    SEQUENCE,
    derElement(CONTEXT_CONSTRUCTED | 0, V3),
    primitive(new asn1js.Integer({ valueHex: f.serialNumber })),
    oneElement(f.signature, 'signature algorithm'),
    oneElement(f.issuer, 'issuer'),
    derElement(SEQUENCE, time(f.notBefore), time(f.notAfter)),
    oneElement(f.subject, 'subject'),
    oneElement(f.subjectPublicKeyInfo, 'SubjectPublicKeyInfo'),
    ...extensions,
  )
}

/** X.690 §8.1: identifier octet, definite length (short form below 128, else the fewest octets), contents. */
export function derElement(tag: number, ...contents: Buffer[]): Buffer {
  const content = Buffer.concat(contents)
  const length = content.length
  const octets: number[] = []
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) octets.unshift(rest & 0xff)
  const header = length < 0x80 ? [tag, length] : [tag, 0x80 | octets.length, ...octets]
  return Buffer.concat([Buffer.from(header), content])
}

function primitive(block: asn1js.BaseBlock): Buffer {
  return Buffer.from(block.toBER())
}

/** The bytes, once their first element's header says it spans them all. */
function oneElement(der: Buffer, what: string): Buffer {
  if (elementLength(der) !== der.length) throw new Error(`${what} is not one DER element`)
  return der
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds. */
function time(date: Date): Buffer {
  const seconds = new Date(Math.floor(date.getTime() / 1000) * 1000)
  return primitive(
    seconds.getUTCFullYear() > 2049
      ? new asn1js.GeneralizedTime({ valueDate: seconds })
      : new asn1js.UTCTime({ valueDate: seconds }),
  )
}

function extension(e: CertificateExtension): Buffer {
  return derElement(
    SEQUENCE,
    primitive(new asn1js.ObjectIdentifier({ value: e.oid })),
    // DER leaves out a BOOLEAN that has its DEFAULT (FALSE)
    ...(e.critical ? [primitive(new asn1js.Boolean({ value: true }))] : []),
    primitive(new asn1js.OctetString({ valueHex: e.value })),
  )
}
