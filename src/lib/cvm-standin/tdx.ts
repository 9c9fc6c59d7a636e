/**
 * TEST DOUBLE at the hardware boundary: a stand-in for Intel's TDX quoting infrastructure
 * (root CA, PCK platform CA and PCK certificate, quoting enclave, PCS collateral), for tests and
 * the local cluster, where no TDX hardware exists. Its quotes are laid out and signed exactly as
 * DCAP quote v4, but chain to a stand-in root ("… STAND-IN, not Intel"), which a verifier
 * pinning Intel's root refuses. It proves nothing about any machine.
 */
import { createHash, createPublicKey, sign, type KeyObject } from 'node:crypto'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP256KeyPair,
  keyUsage,
  randomSerialNumber,
  signCertificate,
  subjectKeyIdentifier,
  toPem,
} from '../x509/index.js'
import { tdx } from '../attestation/index.js'
import { standInCollateral, type StandInCollateralOptions, type StandInPlatform } from './tdx-collateral.js'

const {
  encodePckExtension,
  encodeSgxReportBody,
  encodeTdQuoteBody,
  parseTdReport,
  SGX_EXTENSION_OID,
  tdReportToQuoteBody,
} = tdx
type TdQuoteBody = tdx.TdQuoteBody
type TdxCollateralFiles = tdx.TdxCollateralFiles

export interface TdxStandInOptions {
  fmspc?: string
  /** SGX TCB components 1–16 in the PCK certificate. */
  tcbComponents?: number[]
  pceSvn?: number
  /** The TEE_TCB_SVN quotes carry unless a quote says otherwise (and the collateral's up-to-date level). */
  teeTcbSvn?: Buffer
  qeSvn?: number
  /** Start of every certificate's validity (default: now, minus an hour for clock skew). */
  notBefore?: Date
}

export interface TdxQuoteFields {
  reportData: Buffer
  mrTd?: Buffer
  rtmrs?: Partial<Record<0 | 1 | 2 | 3, Buffer>>
  tdAttributes?: Buffer
  xfam?: Buffer
  mrSeam?: Buffer
  teeTcbSvn?: Buffer
}

export interface TdxStandInKeys {
  root: KeyObject
  pckCa: KeyObject
  pck: KeyObject
  /** The quoting enclave's attestation key: one per stand-in. */
  attestation: KeyObject
  tcbSigning: KeyObject
}

export interface TdxStandInCertificates {
  root: string
  pckCa: string
  pck: string
  tcbSigning: string
}

export interface TdxStandIn {
  readonly rootPem: string
  readonly platform: StandInPlatform
  readonly keys: TdxStandInKeys
  readonly certificates: TdxStandInCertificates
  quote(fields: TdxQuoteFields): Buffer
  /** What Azure's IMDS /acc/tdquote does: a TD report in, a quote of its fields out. */
  quoteFromTdReport(tdReport: Buffer): Buffer
  collateral(opts?: StandInCollateralOptions & { now?: Date }): TdxCollateralFiles
}

const YEAR_MS = 365 * 24 * 3600 * 1000
const HOUR_MS = 3600 * 1000
/** Intel's QE vendor ID: a stand-in QE claims the same vendor, as the QE it stands in for. */
const QE_VENDOR_ID = Buffer.from('939a7233f79c4ca9940a0db3957f0607', 'hex')
/** The attributes a production TD QE reports (INIT, MODE64BIT, PROVISIONKEY; XFRM x87/SSE/AVX…). */
const QE_ATTRIBUTES = Buffer.from('1500000000000000e700000000000000', 'hex')
const QE_AUTH_DATA = Buffer.from(Array.from({ length: 32 }, (_, i) => i))
const digest48 = (label: string) =>
  createHash('sha384').update(`constellation TDX stand-in ${label}`).digest()
const digest32 = (label: string) =>
  createHash('sha256').update(`constellation TDX stand-in ${label}`).digest()

export async function createTdxStandIn(opts: TdxStandInOptions = {}): Promise<TdxStandIn> {
  const [root, pckCa, pck, attestation, tcbSigning] = await Promise.all(
    Array.from({ length: 5 }, () => generateEcdsaP256KeyPair()),
  ).then((pairs) => pairs.map((p) => p.privateKey))
  const keys = { root, pckCa, pck, attestation, tcbSigning } as TdxStandInKeys
  const platform = platformOf(opts)
  const certificates = issueCertificates(keys, platform, opts.notBefore ?? new Date(Date.now() - HOUR_MS))
  return standInFrom(keys, certificates, platform)
}

export function platformOf(opts: TdxStandInOptions): StandInPlatform {
  return {
    fmspc: opts.fmspc ?? '00906ed50000',
    pceId: '0000',
    tcbComponents: opts.tcbComponents ?? [5, 5, 2, 2, 3, 1, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0],
    pceSvn: opts.pceSvn ?? 11,
    teeTcbSvn: opts.teeTcbSvn ?? Buffer.from('03000500000000000000000000000000', 'hex'),
    qeSvn: opts.qeSvn ?? 4,
    qeMrSigner: digest32('QE signer'),
  }
}

function issueCertificates(
  keys: TdxStandInKeys,
  platform: StandInPlatform,
  notBefore: Date,
): TdxStandInCertificates {
  const notAfter = new Date(notBefore.getTime() + 10 * YEAR_MS)
  const pub = (k: KeyObject) => createPublicKey(k)
  const name = (cn: string) =>
    distinguishedName([
      ['CN', cn],
      ['O', 'constellation test double'],
    ])
  const rootName = name('Intel SGX Root CA STAND-IN, not Intel')
  const caName = name('Intel SGX PCK Platform CA STAND-IN, not Intel')
  const cert = (
    subject: ReturnType<typeof name>,
    issuer: ReturnType<typeof name>,
    key: KeyObject,
    signer: KeyObject,
    extensions: Parameters<typeof signCertificate>[0]['extensions'],
  ) =>
    toPem(
      signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject,
          issuer,
          notBefore,
          notAfter,
          publicKey: pub(key),
          extensions: [subjectKeyIdentifier(pub(key)), ...extensions],
        },
        signer,
      ),
    )
  const sgx = encodePckExtension({
    fmspc: platform.fmspc,
    pceId: platform.pceId,
    tcbComponents: platform.tcbComponents,
    pceSvn: platform.pceSvn,
    cpuSvn: Buffer.from(platform.tcbComponents),
  })
  return {
    root: cert(rootName, rootName, keys.root, keys.root, [caBasicConstraints(), keyUsage(['keyCertSign'])]),
    pckCa: cert(caName, rootName, keys.pckCa, keys.root, [caBasicConstraints(), keyUsage(['keyCertSign'])]),
    pck: cert(name('Intel SGX PCK Certificate STAND-IN, not Intel'), caName, keys.pck, keys.pckCa, [
      keyUsage(['digitalSignature']),
      { oid: SGX_EXTENSION_OID, critical: false, value: sgx },
    ]),
    tcbSigning: cert(
      name('Intel SGX TCB Signing STAND-IN, not Intel'),
      rootName,
      keys.tcbSigning,
      keys.root,
      [keyUsage(['digitalSignature'])],
    ),
  }
}

/** The stand-in from its keys and certificates (fresh or loaded from disk). */
export function standInFrom(
  keys: TdxStandInKeys,
  certificates: TdxStandInCertificates,
  platform: StandInPlatform,
): TdxStandIn {
  const akPublic = rawP256(createPublicKey(keys.attestation))
  const chainPem = [certificates.pck, certificates.pckCa, certificates.root].join('')
  const qeReport = encodeSgxReportBody({
    cpuSvn: Buffer.from(platform.tcbComponents),
    miscSelect: 0,
    attributes: QE_ATTRIBUTES,
    mrEnclave: digest32('QE'),
    mrSigner: platform.qeMrSigner,
    isvProdId: 2,
    isvSvn: platform.qeSvn,
    reportData: Buffer.concat([
      createHash('sha256').update(akPublic).update(QE_AUTH_DATA).digest(),
      Buffer.alloc(32),
    ]),
  })
  // the QE report and everything after the AK signature are the same in every quote
  const certificationTail = qeCertificationData(
    qeReport,
    p1363(keys.pck, qeReport),
    Buffer.from(chainPem, 'latin1'),
  )
  const quoteOf = (body: TdQuoteBody) => {
    const signed = Buffer.concat([header(), encodeTdQuoteBody(body)])
    const signatureData = Buffer.concat([p1363(keys.attestation, signed), akPublic, certificationTail])
    return Buffer.concat([signed, u32(signatureData.length), signatureData])
  }
  return {
    rootPem: certificates.root,
    platform,
    keys,
    certificates,
    quote(fields) {
      const zero48 = Buffer.alloc(48)
      return quoteOf({
        teeTcbSvn: fields.teeTcbSvn ?? platform.teeTcbSvn,
        mrSeam: fields.mrSeam ?? digest48('MRSEAM'),
        mrSignerSeam: zero48,
        seamAttributes: Buffer.alloc(8),
        tdAttributes: fields.tdAttributes ?? Buffer.alloc(8),
        xfam: fields.xfam ?? Buffer.from('e71a060000000000', 'hex'),
        mrTd: fields.mrTd ?? digest48('MRTD'),
        mrConfigId: zero48,
        mrOwner: zero48,
        mrOwnerConfig: zero48,
        rtmrs: [0, 1, 2, 3].map((i) => fields.rtmrs?.[i as 0 | 1 | 2 | 3] ?? zero48) as TdQuoteBody['rtmrs'],
        reportData: fields.reportData,
      })
    },
    quoteFromTdReport(tdReport) {
      return quoteOf(tdReportToQuoteBody(parseTdReport(tdReport)))
    },
    collateral(opts = {}) {
      const signing = { key: keys.tcbSigning, chainPem: certificates.tcbSigning + certificates.root }
      return standInCollateral(platform, signing, { ...opts, now: opts.now ?? new Date() })
    },
  }
}

function header(): Buffer {
  const h = Buffer.alloc(48)
  h.writeUInt16LE(4, 0) // quote v4
  h.writeUInt16LE(2, 2) // ECDSA-256-with-P-256
  h.writeUInt32LE(0x81, 4) // TDX
  QE_VENDOR_ID.copy(h, 12)
  return h
}

function qeCertificationData(qeReport: Buffer, qeSignature: Buffer, chain: Buffer): Buffer {
  const inner = Buffer.concat([u16(5), u32(chain.length), chain])
  const data = Buffer.concat([qeReport, qeSignature, u16(QE_AUTH_DATA.length), QE_AUTH_DATA, inner])
  return Buffer.concat([u16(6), u32(data.length), data])
}

const u16 = (v: number) => Buffer.from([v & 0xff, (v >> 8) & 0xff])
const u32 = (v: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(v)
  return b
}
const p1363 = (key: KeyObject, data: Buffer) => sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })

/** A P-256 public key as the raw x ‖ y a quote carries. */
function rawP256(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' })
  return Buffer.concat([Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')])
}
