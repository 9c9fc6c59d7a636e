/**
 * The few fields a verifier reads from a peer's certificate on every aTLS handshake, read from
 * asn1js's decode by their place in RFC 5280's TBSCertificate (der-tree.ts says why not
 * asn1-schema's parseCertificate). Meant for bytes that node:crypto (OpenSSL) has already accepted
 * as a certificate; any element of a type other than RFC 5280 puts there is refused all the same.
 */
import { X509Certificate } from 'node:crypto'
import * as asn1js from 'asn1js'
import {
  children,
  decodeDer,
  encodingOf,
  extensionsOf,
  isContext,
  isUniversal,
  nameValues,
} from './der-tree.js'
import type { DerBlock, DerExtension } from './der-tree.js'

export type ViewedExtension = DerExtension

export interface CertificateView {
  /** The subject Name's DER exactly as the certificate carries it: the issuer of what it signs. */
  subject: Buffer
  /** The DER SubjectPublicKeyInfo exactly as the certificate carries it. */
  subjectPublicKeyInfo: Buffer
  notBefore: Date
  notAfter: Date
  /** The values of the subject's CN attributes, in order. */
  subjectCommonNames: string[]
  extensions: ViewedExtension[]
}

const COMMON_NAME = '2.5.4.3'

/** Reads the fields; throws an Error naming the element that is not what RFC 5280 puts there. */
export function readCertificateView(der: Uint8Array): CertificateView {
  const [tbs] = children(decodeDer(der, 'certificate'), 'Certificate')
  const fields = children(tbs, 'TBSCertificate')
  // version [0] EXPLICIT is optional (v1 certificates leave it out)
  const at = isContext(fields[0], 0) ? 1 : 0
  const [validity, subject, spki] = [fields[at + 3], fields[at + 4], fields[at + 5]]
  const [notBefore, notAfter] = children(validity, 'Validity')
  if (!spki || !isUniversal(spki, 16, true)) throw new Error('TBSCertificate has no SubjectPublicKeyInfo')
  if (!isUniversal(subject, 16, true)) throw new Error('TBSCertificate subject is not a Name')
  const extensions = fields.slice(at + 6).find((f) => isContext(f, 3))
  return {
    subject: encodingOf(subject as DerBlock),
    subjectPublicKeyInfo: encodingOf(spki),
    notBefore: timeOf(notBefore, 'notBefore'),
    notAfter: timeOf(notAfter, 'notAfter'),
    subjectCommonNames: nameValues(subject, COMMON_NAME, 'subject Name'),
    extensions: extensions ? explicitExtensions(extensions) : [],
  }
}

/** A PEM certificate's subject Name as its DER carries it: the issuer of the certificates it signs. */
export const subjectOf = (certPem: string): Buffer =>
  readCertificateView(new X509Certificate(certPem).raw).subject

function timeOf(block: DerBlock | undefined, what: string): Date {
  if (block instanceof asn1js.UTCTime || block instanceof asn1js.GeneralizedTime) return block.toDate()
  throw new Error(`validity ${what} is not a UTCTime or GeneralizedTime`)
}

/** extensions [3] EXPLICIT Extensions */
function explicitExtensions(tagged: DerBlock): ViewedExtension[] {
  const [list, ...more] = (tagged as asn1js.Constructed).valueBlock.value
  if (more.length > 0) throw new Error('extensions [3] holds more than one element')
  return extensionsOf(list)
}
