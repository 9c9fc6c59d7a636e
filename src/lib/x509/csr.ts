/**
 * PKCS#10 certificate requests (RFC 2986) on @peculiar/asn1-csr: a node makes one for its kubelet
 * certificate; the join service reads one only once its self-signature verified, so every request
 * it acts on names a key that its sender holds.
 */
import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { Attributes, CertificationRequest, CertificationRequestInfo } from '@peculiar/asn1-csr'
import { AsnConvert } from '@peculiar/asn1-schema'
import {
  Attribute,
  Extensions,
  id_ce_subjectAltName,
  SubjectAlternativeName,
  SubjectPublicKeyInfo,
  type GeneralName,
} from '@peculiar/asn1-x509'
import { signatureAlgorithm, toArrayBuffer, toExtension } from './certificate.js'
import { subjectAltName } from './extensions.js'
import { attributeValues, distinguishedName, type NameAttribute } from './name.js'

/** PKCS#9 extensionRequest: the extensions a request asks the CA for. */
const EXTENSION_REQUEST = '1.2.840.113549.1.9.14'

/** The signature algorithms a request may use, with the hash and key type each takes. */
const SIGNATURE_ALGORITHMS: Record<string, { name: string; hash: string; keyType: 'ec' | 'rsa' }> = {
  '1.2.840.10045.4.3.2': { name: 'ecdsa-with-SHA256', hash: 'sha256', keyType: 'ec' },
  '1.2.840.10045.4.3.3': { name: 'ecdsa-with-SHA384', hash: 'sha384', keyType: 'ec' },
  '1.2.840.10045.4.3.4': { name: 'ecdsa-with-SHA512', hash: 'sha512', keyType: 'ec' },
  '1.2.840.113549.1.1.11': { name: 'sha256WithRSAEncryption', hash: 'sha256', keyType: 'rsa' },
  '1.2.840.113549.1.1.12': { name: 'sha384WithRSAEncryption', hash: 'sha384', keyType: 'rsa' },
  '1.2.840.113549.1.1.13': { name: 'sha512WithRSAEncryption', hash: 'sha512', keyType: 'rsa' },
}
/** Known only so that the refusal can name them. */
const REFUSED_ALGORITHMS: Record<string, string> = {
  '1.2.840.113549.1.1.4': 'md5WithRSAEncryption (MD5)',
  '1.2.840.113549.1.1.5': 'sha1WithRSAEncryption (SHA-1)',
  '1.2.840.10045.4.1': 'ecdsa-with-SHA1 (SHA-1)',
  '1.2.840.113549.1.1.10': 'RSASSA-PSS',
  '1.3.101.112': 'Ed25519',
}
const ACCEPTED = Object.values(SIGNATURE_ALGORITHMS)
  .map((a) => a.name)
  .join(', ')

export interface CsrInput {
  /** Signs the request; its public half is the key the request asks a certificate for. */
  key: KeyObject
  subject: readonly NameAttribute[]
  ipSans?: readonly string[]
  dnsSans?: readonly string[]
}

/** The request's public key, in node:crypto's terms (KeyObject.asymmetricKeyType / asymmetricKeyDetails). */
export type CsrPublicKey =
  | { type: 'ec'; namedCurve: string }
  | { type: 'rsa'; modulusLength: number }
  | { type: 'other'; algorithm: string }

/** What a verified request asks for (the join service's CsrFields). */
export interface ParsedCsr {
  /** Every O attribute of the subject, in order. */
  organizations: string[]
  /** Every CN attribute of the subject, in order. */
  commonNames: string[]
  key: CsrPublicKey
  /** The DER SubjectPublicKeyInfo. */
  publicKeyDer: Buffer
  dnsNames: string[]
  /** IP SANs as text: dotted IPv4, compressed IPv6; other lengths as the decoder renders them. */
  ipAddresses: string[]
  /** Always true: parseCsr refuses a request whose signature does not verify. */
  signatureValid: true
}

/** The request is not one we can act on; the message names the part at fault. */
export class CsrError extends Error {
  constructor(message: string, opts?: ErrorOptions) {
    super(message, opts)
    this.name = 'CsrError'
  }
}

/** A DER PKCS#10 request signed with SHA-256 (ECDSA P-256 or RSA key); SANs go in an extensionRequest. */
export function createCsr(input: CsrInput): Buffer {
  const sans = { ips: input.ipSans ?? [], dns: input.dnsSans ?? [] }
  const requested =
    sans.ips.length + sans.dns.length > 0
      ? [
          new Attribute({
            type: EXTENSION_REQUEST,
            values: [AsnConvert.serialize(new Extensions([toExtension(subjectAltName(sans))]))],
          }),
        ]
      : []
  const info = new CertificationRequestInfo({
    version: 0,
    subject: distinguishedName(input.subject),
    subjectPKInfo: AsnConvert.parse(
      createPublicKey(input.key).export({ type: 'spki', format: 'der' }),
      SubjectPublicKeyInfo,
    ),
    attributes: new Attributes(requested),
  })
  const algorithm = signatureAlgorithm(input.key)
  const signature = sign('sha256', Buffer.from(AsnConvert.serialize(info)), input.key)
  const request = new CertificationRequest({
    certificationRequestInfo: info,
    signatureAlgorithm: algorithm,
    signature: toArrayBuffer(signature),
  })
  return Buffer.from(AsnConvert.serialize(request))
}

/**
 * Reads a DER PKCS#10 request and verifies its self-signature; throws a CsrError naming the reason
 * for anything else: not DER PKCS#10, another version, an unreadable key, a signature algorithm we
 * do not accept or that does not fit the key, a signature that does not verify, a SAN of a type
 * other than DNS name or IP address.
 */
export function parseCsr(der: Buffer): ParsedCsr {
  const request = decodeRequest(der)
  const info = request.certificationRequestInfo
  if (info.version !== 0) throw new CsrError(`version ${info.version + 1}; PKCS#10 knows only version 1`)
  const publicKeyDer = Buffer.from(AsnConvert.serialize(info.subjectPKInfo))
  const publicKey = readPublicKey(publicKeyDer, info.subjectPKInfo.algorithm.algorithm)
  const signed = request.certificationRequestInfoRaw ?? AsnConvert.serialize(info)
  verifySignature(request, Buffer.from(signed), publicKey)
  const { dnsNames, ipAddresses } = requestedNames(info.attributes)
  return {
    organizations: attributeValues(info.subject, 'O'),
    commonNames: attributeValues(info.subject, 'CN'),
    key: describeKey(publicKey),
    publicKeyDer, // the SPKI the signature verified with (exporting the KeyObject again costs ~1% of a join)
    dnsNames,
    ipAddresses,
    signatureValid: true,
  }
}

function decodeRequest(der: Buffer): CertificationRequest {
  try {
    const length = outerDerLength(der)
    if (length !== der.length) throw new Error(`${der.length - length} bytes follow the request's SEQUENCE`)
    return AsnConvert.parse(der, CertificationRequest)
  } catch (cause) {
    throw new CsrError(`not a DER PKCS#10 request: ${messageOf(cause)}`, { cause })
  }
}

/** Bytes the first DER element spans (tag, length, contents), so that trailing bytes are noticed. */
function outerDerLength(der: Buffer): number {
  if (der.length < 2 || der[0] !== 0x30) throw new Error('does not start with a SEQUENCE')
  const first = der[1] ?? 0
  if (first < 0x80) return 2 + first
  const octets = first & 0x7f
  if (octets === 0 || octets > 4 || der.length < 2 + octets) throw new Error('bad length of the SEQUENCE')
  return 2 + octets + der.readUIntBE(2, octets)
}

function readPublicKey(spki: Buffer, algorithmOid: string): KeyObject {
  try {
    return createPublicKey({ key: spki, format: 'der', type: 'spki' })
  } catch (cause) {
    throw new CsrError(`public key (algorithm ${algorithmOid}) cannot be read: ${messageOf(cause)}`, {
      cause,
    })
  }
}

function verifySignature(request: CertificationRequest, signed: Buffer, key: KeyObject): void {
  const oid = request.signatureAlgorithm.algorithm
  const algorithm = SIGNATURE_ALGORITHMS[oid]
  if (!algorithm)
    throw new CsrError(
      `signature algorithm ${REFUSED_ALGORITHMS[oid] ?? oid} is not accepted; use one of ${ACCEPTED}`,
    )
  if (key.asymmetricKeyType !== algorithm.keyType)
    throw new CsrError(
      `signature algorithm ${algorithm.name} does not fit the request's ${key.asymmetricKeyType ?? 'unknown'} key`,
    )
  let valid: boolean
  try {
    valid = verify(algorithm.hash, signed, key, Buffer.from(request.signature))
  } catch (cause) {
    throw new CsrError(`signature is malformed: ${messageOf(cause)}`, { cause })
  }
  if (!valid) throw new CsrError(`signature (${algorithm.name}) does not verify with the request's own key`)
}

function describeKey(key: KeyObject): CsrPublicKey {
  const details = key.asymmetricKeyDetails
  if (key.asymmetricKeyType === 'ec' && details?.namedCurve)
    return { type: 'ec', namedCurve: details.namedCurve }
  if (key.asymmetricKeyType === 'rsa' && details?.modulusLength)
    return { type: 'rsa', modulusLength: details.modulusLength }
  return { type: 'other', algorithm: key.asymmetricKeyType ?? 'unknown' }
}

/** The SANs of the extensionRequest; a request may carry at most one of each. */
function requestedNames(attributes: Attributes | undefined): { dnsNames: string[]; ipAddresses: string[] } {
  const names = { dnsNames: [] as string[], ipAddresses: [] as string[] }
  const requests = (attributes ?? []).filter((a) => a.type === EXTENSION_REQUEST)
  if (requests.length === 0) return names
  const [only, ...more] = requests.flatMap((a) => a.values)
  if (!only || more.length > 0 || requests.length > 1)
    throw new CsrError('extensionRequest: more than one value; want exactly one')
  let extensions: Extensions
  try {
    extensions = AsnConvert.parse(only, Extensions)
  } catch (cause) {
    throw new CsrError(`extensionRequest: not a list of extensions: ${messageOf(cause)}`, { cause })
  }
  const sans = extensions.filter((e) => e.extnID === id_ce_subjectAltName)
  if (sans.length > 1) throw new CsrError('extensionRequest: more than one subjectAltName')
  const [san] = sans
  if (!san) return names
  let general: SubjectAlternativeName
  try {
    general = AsnConvert.parse(san.extnValue.buffer, SubjectAlternativeName)
  } catch (cause) {
    throw new CsrError(`subjectAltName: cannot be read: ${messageOf(cause)}`, { cause })
  }
  for (const name of general) {
    if (name.dNSName !== undefined) names.dnsNames.push(name.dNSName)
    else if (name.iPAddress !== undefined) names.ipAddresses.push(name.iPAddress)
    else throw new CsrError(`subjectAltName: ${kindOf(name)} names are not accepted; only DNS and IP`)
  }
  return names
}

function kindOf(name: GeneralName): string {
  const kind = Object.entries(name).find(([, v]) => v !== undefined)?.[0]
  return kind ?? 'empty'
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))
