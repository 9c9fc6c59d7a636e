/**
 * parseTdxQuote: a DCAP quote v4 taken apart into typed fields, no trust involved. Every
 * structural problem (version, key type, TEE type, certification data type, a length past the
 * end) is refused with the field and its offset.
 */
import { X509Certificate } from 'node:crypto'
import { StructReader, writeFields, type FieldSpec } from './bytes.js'
import {
  ATTESTATION_KEY_TYPE_ECDSA_P256,
  BODY_FIELDS,
  CERT_DATA_PCK_CHAIN,
  CERT_DATA_QE_REPORT,
  ECDSA_KEY_SIZE,
  ECDSA_SIGNATURE_SIZE,
  HEADER,
  HEADER_SIZE,
  QUOTE_VERSION_V4,
  SGX_REPORT_BODY_SIZE,
  SGX_REPORT_FIELDS,
  SIGNED_DATA_OFFSET,
  SIGNED_DATA_SIZE_OFFSET,
  TD_QUOTE_BODY_SIZE,
  TEE_TYPE_TDX,
} from './layout.js'

/** A quote of a few KiB; 64 KiB leaves room for long chains, not for abuse. */
export const MAX_QUOTE_BYTES = 64 * 1024
/** Leaf, intermediate CA, root. */
const MAX_PCK_CERTIFICATES = 4

export interface TdxQuoteHeader {
  version: number
  attestationKeyType: number
  teeType: number
  qeSvn: number
  pceSvn: number
  qeVendorId: Buffer
  userData: Buffer
}

export interface TdQuoteBody {
  teeTcbSvn: Buffer
  mrSeam: Buffer
  mrSignerSeam: Buffer
  seamAttributes: Buffer
  tdAttributes: Buffer
  xfam: Buffer
  mrTd: Buffer
  mrConfigId: Buffer
  mrOwner: Buffer
  mrOwnerConfig: Buffer
  rtmrs: [Buffer, Buffer, Buffer, Buffer]
  reportData: Buffer
}

/** The quoting enclave's SGX report body. */
export interface SgxReportBody {
  cpuSvn: Buffer
  miscSelect: number
  attributes: Buffer
  mrEnclave: Buffer
  mrSigner: Buffer
  isvProdId: number
  isvSvn: number
  reportData: Buffer
}

export interface TdxQuote {
  header: TdxQuoteHeader
  body: TdQuoteBody
  /** Header ‖ body: what the attestation key signed. */
  signedBytes: Buffer
  /** Raw r ‖ s. */
  signature: Buffer
  /** Raw P-256 x ‖ y. */
  attestationKey: Buffer
  qeReport: SgxReportBody
  /** The 384 bytes the PCK leaf key signed. */
  qeReportRaw: Buffer
  qeReportSignature: Buffer
  qeAuthData: Buffer
  /** Leaf first, as the quote carries them (not yet trusted). */
  pckChain: X509Certificate[]
  /** Bytes after the signed data: signed by nothing, used for nothing. */
  trailingBytes: number
}

export function parseTdxQuote(raw: Buffer): TdxQuote {
  const r = new StructReader(raw, 'TDX quote')
  if (raw.length > MAX_QUOTE_BYTES)
    throw r.refuse('quote', 0, `is ${raw.length} bytes, more than ${MAX_QUOTE_BYTES}`)
  const header = parseHeader(r)
  const body = parseTdQuoteBody(r.bytes('TD quote body', HEADER_SIZE, TD_QUOTE_BODY_SIZE))
  const signedDataSize = r.u32('signature data length', SIGNED_DATA_SIZE_OFFSET)
  const end = SIGNED_DATA_OFFSET + signedDataSize
  if (end > raw.length)
    throw r.refuse(
      'signature data length',
      SIGNED_DATA_SIZE_OFFSET,
      `is ${signedDataSize}, past the end of the ${raw.length}-byte quote`,
    )
  let at = SIGNED_DATA_OFFSET
  const signature = r.bytes('ECDSA signature', at, ECDSA_SIGNATURE_SIZE)
  at += ECDSA_SIGNATURE_SIZE
  const attestationKey = r.bytes('attestation key', at, ECDSA_KEY_SIZE)
  at += ECDSA_KEY_SIZE
  const certType = r.u16('certification data type', at)
  if (certType !== CERT_DATA_QE_REPORT)
    throw r.refuse(
      'certification data type',
      at,
      `is ${certType}, expected ${CERT_DATA_QE_REPORT} (QE report certification data)`,
    )
  const certSize = r.u32('certification data size', at + 2)
  at += 6
  if (at + certSize !== end)
    throw r.refuse(
      'certification data size',
      at - 4,
      `is ${certSize}, but the signature data leaves ${end - at} bytes for it`,
    )
  const qeReportRaw = r.bytes('QE report', at, SGX_REPORT_BODY_SIZE)
  at += SGX_REPORT_BODY_SIZE
  const qeReportSignature = r.bytes('QE report signature', at, ECDSA_SIGNATURE_SIZE)
  at += ECDSA_SIGNATURE_SIZE
  const authSize = r.u16('QE authentication data size', at)
  const qeAuthData = r.bytes('QE authentication data', at + 2, authSize)
  at += 2 + authSize
  const innerType = r.u16('PCK certification data type', at)
  if (innerType !== CERT_DATA_PCK_CHAIN)
    throw r.refuse(
      'PCK certification data type',
      at,
      `is ${innerType}, expected ${CERT_DATA_PCK_CHAIN} (PCK certificate chain)`,
    )
  const innerSize = r.u32('PCK certificate chain size', at + 2)
  at += 6
  if (at + innerSize !== end)
    throw r.refuse(
      'PCK certificate chain size',
      at - 4,
      `is ${innerSize}, but the certification data leaves ${end - at} bytes for it`,
    )
  const pckChain = parsePemChain(r.bytes('PCK certificate chain', at, innerSize), r, at)
  return {
    header,
    body,
    signedBytes: r.bytes('header and body', 0, HEADER_SIZE + TD_QUOTE_BODY_SIZE),
    signature,
    attestationKey,
    qeReport: parseSgxReportBody(qeReportRaw),
    qeReportRaw,
    qeReportSignature,
    qeAuthData,
    pckChain,
    trailingBytes: raw.length - end,
  }
}

function parseHeader(r: StructReader): TdxQuoteHeader {
  const version = r.u16(HEADER.version.name, HEADER.version.offset)
  if (version !== QUOTE_VERSION_V4)
    throw r.refuse(
      HEADER.version.name,
      0,
      `is ${version}, expected ${QUOTE_VERSION_V4}${version === 5 ? ' (quote v5 of TDX 1.5 is not supported yet)' : ''}`,
    )
  const attestationKeyType = r.u16(HEADER.attestationKeyType.name, HEADER.attestationKeyType.offset)
  if (attestationKeyType !== ATTESTATION_KEY_TYPE_ECDSA_P256)
    throw r.refuse(
      HEADER.attestationKeyType.name,
      2,
      `is ${attestationKeyType}, expected ${ATTESTATION_KEY_TYPE_ECDSA_P256} (ECDSA-256-with-P-256)`,
    )
  const teeType = r.u32(HEADER.teeType.name, HEADER.teeType.offset)
  if (teeType !== TEE_TYPE_TDX)
    throw r.refuse(HEADER.teeType.name, 4, `is 0x${teeType.toString(16)}, expected 0x81 (TDX)`)
  return {
    version,
    attestationKeyType,
    teeType,
    qeSvn: r.u16(HEADER.qeSvn.name, HEADER.qeSvn.offset),
    pceSvn: r.u16(HEADER.pceSvn.name, HEADER.pceSvn.offset),
    qeVendorId: r.field(HEADER.qeVendorId),
    userData: r.field(HEADER.userData),
  }
}

const read = (raw: Buffer, specs: readonly FieldSpec[], what: string): Record<string, Buffer> => {
  const r = new StructReader(raw, what)
  return Object.fromEntries(specs.map((s) => [s.name, r.field(s)]))
}

/** The 584-byte TD quote body (TD 1.0 layout). */
export function parseTdQuoteBody(raw: Buffer): TdQuoteBody {
  const f = read(raw, BODY_FIELDS, 'TD quote body')
  const get = (name: string) => f[name] as Buffer
  return {
    teeTcbSvn: get('teeTcbSvn'),
    mrSeam: get('mrSeam'),
    mrSignerSeam: get('mrSignerSeam'),
    seamAttributes: get('seamAttributes'),
    tdAttributes: get('tdAttributes'),
    xfam: get('xfam'),
    mrTd: get('mrTd'),
    mrConfigId: get('mrConfigId'),
    mrOwner: get('mrOwner'),
    mrOwnerConfig: get('mrOwnerConfig'),
    rtmrs: [get('rtmr0'), get('rtmr1'), get('rtmr2'), get('rtmr3')],
    reportData: get('reportData'),
  }
}

export function encodeTdQuoteBody(body: TdQuoteBody): Buffer {
  const { rtmrs, ...fields } = body
  const [rtmr0, rtmr1, rtmr2, rtmr3] = rtmrs
  return writeFields(TD_QUOTE_BODY_SIZE, BODY_FIELDS, { ...fields, rtmr0, rtmr1, rtmr2, rtmr3 })
}

export function parseSgxReportBody(raw: Buffer): SgxReportBody {
  const f = read(raw, SGX_REPORT_FIELDS, 'QE report')
  const get = (name: string) => f[name] as Buffer
  return {
    cpuSvn: get('cpuSvn'),
    miscSelect: get('miscSelect').readUInt32LE(0),
    attributes: get('attributes'),
    mrEnclave: get('mrEnclave'),
    mrSigner: get('mrSigner'),
    isvProdId: get('isvProdId').readUInt16LE(0),
    isvSvn: get('isvSvn').readUInt16LE(0),
    reportData: get('reportData'),
  }
}

export function encodeSgxReportBody(report: SgxReportBody): Buffer {
  const u16 = (v: number) => Buffer.from([v & 0xff, (v >> 8) & 0xff])
  const misc = Buffer.alloc(4)
  misc.writeUInt32LE(report.miscSelect >>> 0)
  return writeFields(SGX_REPORT_BODY_SIZE, SGX_REPORT_FIELDS, {
    ...report,
    miscSelect: misc,
    isvProdId: u16(report.isvProdId),
    isvSvn: u16(report.isvSvn),
  })
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END CERTIFICATE-----/g

function parsePemChain(raw: Buffer, r: StructReader, offset: number): X509Certificate[] {
  // trailing NULs are how some quote generators pad the chain
  const text = raw.toString('latin1').replace(/\0+$/, '')
  const blocks = [...text.matchAll(PEM_CERTIFICATE)]
  if (blocks.length === 0) throw r.refuse('PCK certificate chain', offset, 'holds no PEM certificate')
  if (blocks.length > MAX_PCK_CERTIFICATES)
    throw r.refuse(
      'PCK certificate chain',
      offset,
      `holds ${blocks.length} certificates, more than ${MAX_PCK_CERTIFICATES}`,
    )
  const rest = text.replace(PEM_CERTIFICATE, '').trim()
  if (rest !== '') throw r.refuse('PCK certificate chain', offset, 'holds text outside its PEM certificates')
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b[0])
    } catch (err: unknown) {
      throw r.refuse(
        `PCK certificate chain[${i}]`,
        offset,
        `is not an X.509 certificate (${err instanceof Error ? err.message : String(err)})`,
      )
    }
  })
}
