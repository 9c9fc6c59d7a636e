/**
 * PKCS#10 certificate requests (RFC 2986) on @peculiar/asn1-csr: a node makes one for its kubelet
 * certificate; the join service reads one only once its self-signature verified, so every request
 * it acts on names a key that its sender holds.
 */
import { createPublicKey, sign, verify, type JsonWebKeyInput, type KeyObject } from 'node:crypto'
import { Attributes, CertificationRequest, CertificationRequestInfo } from '@peculiar/asn1-csr'
import { AsnConvert } from '@peculiar/asn1-schema'
import {
  AsnIpConverter,
  Attribute,
  Extensions,
  id_ce_subjectAltName,
  SubjectPublicKeyInfo,
} from '@peculiar/asn1-x509'
import * as asn1js from 'asn1js'
import { signatureAlgorithm, toArrayBuffer, toExtension } from './certificate.js'
import {
  children,
  decodeDer,
  elementLength,
  encodingOf,
  extensionsOf,
  isContext,
  isUniversal,
  nameValues,
  oidOf,
  type DerBlock,
} from './der-tree.js'
import { subjectAltName } from './extensions.js'
import { distinguishedName, type NameAttribute } from './name.js'

/** PKCS#9 extensionRequest: the extensions a request asks the CA for. */
const EXTENSION_REQUEST = '1.2.840.113549.1.9.14'
const COMMON_NAME = '2.5.4.3'
const ORGANIZATION = '2.5.4.10'
/** GeneralName's CHOICE tags (RFC 5280 §4.2.1.6), for naming the ones a request may not carry. */
const GENERAL_NAME_KINDS = [
  'otherName',
  'rfc822Name',
  'dNSName',
  'x400Address',
  'directoryName',
  'ediPartyName',
  'uniformResourceIdentifier',
  'iPAddress',
  'registeredID',
]
const [DNS_NAME_TAG, IP_ADDRESS_TAG] = [2, 7]
/** A P-256 SubjectPublicKeyInfo up to its point (RFC 5480), byte for byte as OpenSSL writes one. */
const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex')
const P256_POINT_BYTES = 65

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
 * other than DNS name or IP address. The join service reads one per join, so the fields are read
 * from asn1js's decode by their place in RFC 2986 (der-tree.ts says why).
 */
export function parseCsr(der: Buffer): ParsedCsr {
  const request = decodeRequest(der)
  if (request.version !== 0)
    throw new CsrError(`version ${request.version + 1}; PKCS#10 knows only version 1`)
  const publicKey = readPublicKey(request.publicKeyDer, request.keyAlgorithm)
  verifySignature(request, publicKey)
  const { dnsNames, ipAddresses } = requestedNames(request.attributes)
  return {
    organizations: request.organizations,
    commonNames: request.commonNames,
    key: describeKey(publicKey),
    publicKeyDer: request.publicKeyDer, // the SPKI the signature verified with, as the request carries it
    dnsNames,
    ipAddresses,
    signatureValid: true,
  }
}

interface DecodedRequest {
  version: number
  organizations: string[]
  commonNames: string[]
  publicKeyDer: Buffer
  keyAlgorithm: string
  attributes: DerBlock[]
  /** The certificationRequestInfo's encoding, which the signature covers. */
  signed: Buffer
  signatureAlgorithm: string
  signature: Buffer
}

/**
 * CertificationRequest ::= SEQUENCE { certificationRequestInfo, signatureAlgorithm, signature BIT STRING }
 * CertificationRequestInfo ::= SEQUENCE { version INTEGER, subject Name, subjectPKInfo, attributes [0] IMPLICIT SET OF Attribute }
 */
function decodeRequest(der: Buffer): DecodedRequest {
  try {
    if (der.length < 2 || der[0] !== 0x30) throw new Error('does not start with a SEQUENCE')
    const length = elementLength(der)
    if (Number.isNaN(length)) throw new Error('bad length of the SEQUENCE')
    if (length !== der.length) throw new Error(`${der.length - length} bytes follow the request's SEQUENCE`)
    const [info, algorithm, signature] = children(decodeDer(der, 'request'), 'CertificationRequest')
    const [version, subject, spki, attributes] = children(info, 'certificationRequestInfo')
    if (!(version instanceof asn1js.Integer)) throw new Error('version is not an INTEGER')
    const [keyAlgorithm] = children(children(spki, 'subjectPKInfo')[0], 'subjectPKInfo algorithm')
    if (attributes !== undefined && !isContext(attributes, 0))
      throw new Error('attributes is not [0] SET OF Attribute')
    if (
      !(signature instanceof asn1js.BitString) ||
      signature.idBlock.isConstructed ||
      signature.valueBlock.unusedBits !== 0
    )
      throw new Error('signature is not a BIT STRING of whole bytes')
    return {
      version: version.valueBlock.valueDec,
      organizations: nameValues(subject, ORGANIZATION, 'subject'),
      commonNames: nameValues(subject, COMMON_NAME, 'subject'),
      publicKeyDer: encodingOf(spki as DerBlock),
      keyAlgorithm: oidOf(keyAlgorithm, 'subjectPKInfo algorithm'),
      attributes: attributes ? (attributes as asn1js.Constructed).valueBlock.value : [],
      signed: encodingOf(info as DerBlock),
      signatureAlgorithm: oidOf(children(algorithm, 'signatureAlgorithm')[0], 'signatureAlgorithm'),
      signature: Buffer.from(signature.valueBlock.valueHexView),
    }
  } catch (cause) {
    throw new CsrError(`not a DER PKCS#10 request: ${messageOf(cause)}`, { cause })
  }
}

function readPublicKey(spki: Buffer, algorithmOid: string): KeyObject {
  try {
    return createPublicKey(p256Jwk(spki) ?? { key: spki, format: 'der', type: 'spki' })
  } catch (cause) {
    throw new CsrError(`public key (algorithm ${algorithmOid}) cannot be read: ${messageOf(cause)}`, {
      cause,
    })
  }
}

/**
 * A P-256 key in the canonical SPKI encoding as a JWK, the same key: OpenSSL 3 reads a JWK in about
 * half the time of the DER (the join service reads one per join) and checks the point is on the
 * curve either way. Any other encoding, however close, is read as DER.
 */
function p256Jwk(spki: Buffer): JsonWebKeyInput | undefined {
  const at = P256_SPKI_PREFIX.length
  if (
    spki.length !== at + P256_POINT_BYTES ||
    spki[at] !== 0x04 || // an uncompressed point
    !spki.subarray(0, at).equals(P256_SPKI_PREFIX)
  )
    return undefined
  const coordinate = (from: number) => spki.subarray(from, from + 32).toString('base64url')
  return { key: { kty: 'EC', crv: 'P-256', x: coordinate(at + 1), y: coordinate(at + 33) }, format: 'jwk' }
}

function verifySignature(request: DecodedRequest, key: KeyObject): void {
  const oid = request.signatureAlgorithm
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
    valid = verify(algorithm.hash, request.signed, key, request.signature)
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
function requestedNames(attributes: DerBlock[]): { dnsNames: string[]; ipAddresses: string[] } {
  const names = { dnsNames: [] as string[], ipAddresses: [] as string[] }
  const requests = attributes
    .map((a) => children(a, 'attribute'))
    .filter(
      ([type]) => type instanceof asn1js.ObjectIdentifier && type.valueBlock.toString() === EXTENSION_REQUEST,
    )
  if (requests.length === 0) return names
  const values = requests.flatMap(([, set]) =>
    isUniversal(set, 17, true) ? (set as asn1js.Set).valueBlock.value : [undefined],
  )
  const [only, ...more] = values
  if (!only || more.length > 0 || requests.length > 1)
    throw new CsrError('extensionRequest: more than one value; want exactly one')
  let sans: Buffer[]
  try {
    sans = extensionsOf(only)
      .filter((e) => e.oid === id_ce_subjectAltName)
      .map((e) => e.value)
  } catch (cause) {
    throw new CsrError(`extensionRequest: not a list of extensions: ${messageOf(cause)}`, { cause })
  }
  if (sans.length > 1) throw new CsrError('extensionRequest: more than one subjectAltName')
  const [san] = sans
  if (!san) return names
  let general: DerBlock[]
  try {
    general = children(decodeDer(san, 'subjectAltName'), 'GeneralNames')
  } catch (cause) {
    throw new CsrError(`subjectAltName: cannot be read: ${messageOf(cause)}`, { cause })
  }
  for (const name of general) {
    if (isContext(name, DNS_NAME_TAG, false))
      names.dnsNames.push(Buffer.from((name as asn1js.Primitive).valueBlock.valueHexView).toString('latin1'))
    else if (isContext(name, IP_ADDRESS_TAG, false)) names.ipAddresses.push(AsnIpConverter.fromASN(name))
    else throw new CsrError(`subjectAltName: ${kindOf(name)} names are not accepted; only DNS and IP`)
  }
  return names
}

function kindOf(name: DerBlock): string {
  const { tagClass, tagNumber } = name.idBlock
  return (tagClass === 3 && GENERAL_NAME_KINDS[tagNumber]) || 'unknown'
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))
