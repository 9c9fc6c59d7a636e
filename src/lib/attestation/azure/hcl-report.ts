/**
 * Azure's HCL report, as the paravisor (HCL) writes it into vTPM NV index 0x01400001 and
 * Constellation's internal/attestation/azure reads it: a 32-byte header ("HCLA", version, size,
 * request type, status, reserved), the hardware report in a 1184-byte area (an SEV-SNP report, or a
 * 1024-byte TD report padded with zeros), then the IGVM request data: size, version, report type,
 * hash type, variable-data size (u32 LE each) and the variable data, the runtime-data JSON.
 * The NV index is larger than the report: bytes after the header's size are padding.
 */
import { createHash, createPublicKey, type KeyObject } from 'node:crypto'
import { AttestationError, EvidenceMismatchError } from '../errors.js'
import { jsonFields } from '../json-fields.js'

export interface HclReport {
  kind: 'snp' | 'tdx'
  /** SEV-SNP report (1184 bytes) or TD report (1024 bytes). */
  hardwareReport: Buffer
  /** The JSON variable data (runtime data) the hardware report's REPORT_DATA binds. */
  runtimeData: Buffer
}

const SIGNATURE = 'HCLA'
const HEADER_SIZE = 32
const HARDWARE_AREA = 1184
const REQUEST_DATA_OFFSET = HEADER_SIZE + HARDWARE_AREA
const REQUEST_HEADER_SIZE = 20
const RUNTIME_DATA_OFFSET = REQUEST_DATA_OFFSET + REQUEST_HEADER_SIZE
/** The header's version and request type Constellation's recorded reports carry. */
const HCL_VERSION = 2
const HCL_REQUEST_TYPE = 2
const IGVM_REQUEST_VERSION = 1
/** IGVM report types and their hardware report sizes. */
const REPORT_TYPES = { snp: { type: 2, size: 1184 }, tdx: { type: 4, size: 1024 } } as const
/** IGVM hash type 1: SHA-256 over the variable data (2 and 3 would be SHA-384/512, not used). */
const HASH_TYPE_SHA256 = 1
/** An NV index holds at most a few KiB; the runtime data is a small JSON document. */
const MAX_RUNTIME_DATA = 16 * 1024

const BASE64URL = /^[A-Za-z0-9_-]+$/
/** The HCL's attestation key is RSA 2048 in every recorded report. */
const MIN_AK_BITS = 2048

const malformed = (why: string) => new AttestationError(`malformed Azure HCL report: ${why}`)

export function parseHclReport(raw: Buffer): HclReport {
  if (raw.length < RUNTIME_DATA_OFFSET)
    throw malformed(`${raw.length} bytes, fewer than the ${RUNTIME_DATA_OFFSET} its fixed part takes`)
  const signature = raw.subarray(0, 4).toString('latin1')
  if (signature !== SIGNATURE)
    throw malformed(
      `signature (offset 0) is ${JSON.stringify(signature)} (hex ${raw.subarray(0, 4).toString('hex')}), expected "HCLA"`,
    )
  const u32 = (offset: number) => raw.readUInt32LE(offset)
  const type = u32(REQUEST_DATA_OFFSET + 8)
  const kind = type === REPORT_TYPES.snp.type ? 'snp' : type === REPORT_TYPES.tdx.type ? 'tdx' : undefined
  if (!kind)
    throw malformed(
      `report type (offset ${REQUEST_DATA_OFFSET + 8}) is ${type}, expected 2 (SEV-SNP) or 4 (TDX)`,
    )
  const hashType = u32(REQUEST_DATA_OFFSET + 12)
  if (hashType !== HASH_TYPE_SHA256)
    throw malformed(`hash type (offset ${REQUEST_DATA_OFFSET + 12}) is ${hashType}, expected 1 (SHA-256)`)
  const size = u32(REQUEST_DATA_OFFSET + 16)
  if (size > MAX_RUNTIME_DATA || RUNTIME_DATA_OFFSET + size > raw.length)
    throw malformed(
      `runtime data size (offset ${REQUEST_DATA_OFFSET + 16}) is ${size}; at most ${Math.min(MAX_RUNTIME_DATA, raw.length - RUNTIME_DATA_OFFSET)} bytes follow`,
    )
  const dataSize = u32(REQUEST_DATA_OFFSET)
  if (dataSize !== REQUEST_HEADER_SIZE + size)
    throw malformed(
      `request data size (offset ${REQUEST_DATA_OFFSET}) is ${dataSize}, expected ${REQUEST_HEADER_SIZE + size}`,
    )
  const total = u32(8)
  if (total !== RUNTIME_DATA_OFFSET + size)
    throw malformed(`report size (offset 8) is ${total}, expected ${RUNTIME_DATA_OFFSET + size}`)
  const hwSize = REPORT_TYPES[kind].size
  const padding = raw.subarray(HEADER_SIZE + hwSize, REQUEST_DATA_OFFSET)
  if (padding.some((b) => b !== 0))
    throw malformed(`bytes ${HEADER_SIZE + hwSize}–${REQUEST_DATA_OFFSET} after the TD report must be zero`)
  return {
    kind,
    hardwareReport: Buffer.from(raw.subarray(HEADER_SIZE, HEADER_SIZE + hwSize)),
    runtimeData: Buffer.from(raw.subarray(RUNTIME_DATA_OFFSET, RUNTIME_DATA_OFFSET + size)),
  }
}

/** The inverse of parseHclReport, for the stand-in (header fields as the recorded reports have them). */
export function encodeHclReport(report: HclReport): Buffer {
  const { type, size } = REPORT_TYPES[report.kind]
  if (report.hardwareReport.length !== size)
    throw new Error(
      `${report.kind} hardware report is ${report.hardwareReport.length} bytes, expected ${size}`,
    )
  const out = Buffer.alloc(RUNTIME_DATA_OFFSET + report.runtimeData.length)
  out.write(SIGNATURE, 0, 'latin1')
  out.writeUInt32LE(HCL_VERSION, 4)
  out.writeUInt32LE(out.length, 8)
  out.writeUInt32LE(HCL_REQUEST_TYPE, 12)
  report.hardwareReport.copy(out, HEADER_SIZE)
  const at = REQUEST_DATA_OFFSET
  out.writeUInt32LE(REQUEST_HEADER_SIZE + report.runtimeData.length, at)
  out.writeUInt32LE(IGVM_REQUEST_VERSION, at + 4)
  out.writeUInt32LE(type, at + 8)
  out.writeUInt32LE(HASH_TYPE_SHA256, at + 12)
  out.writeUInt32LE(report.runtimeData.length, at + 16)
  report.runtimeData.copy(out, RUNTIME_DATA_OFFSET)
  return out
}

/** The HCL's attestation key: the RSA JWK under keys[kid = "HCLAkPub"] in the runtime data. */
export function hclAttestationKey(runtimeData: Buffer): KeyObject {
  const json = jsonFields('Azure HCL runtime data')
  const doc = json.object(json.parse(runtimeData, MAX_RUNTIME_DATA), 'document')
  if (!Array.isArray(doc.keys)) throw json.malformed('keys', 'must be a list of JWKs')
  const matches = doc.keys.filter(
    (k: unknown) => typeof k === 'object' && k !== null && (k as { kid?: unknown }).kid === 'HCLAkPub',
  )
  if (matches.length !== 1)
    throw json.malformed('keys', `must hold exactly one key with kid "HCLAkPub", found ${matches.length}`)
  const jwk = json.object(matches[0], 'keys[kid=HCLAkPub]')
  if (jwk.kty !== 'RSA' || typeof jwk.n !== 'string' || typeof jwk.e !== 'string')
    throw json.malformed('keys[kid=HCLAkPub]', 'must be an RSA JWK with string "n" and "e"')
  // node's JWK import decodes base64url leniently; the HCL writes it strictly
  if (!BASE64URL.test(jwk.n) || !BASE64URL.test(jwk.e))
    throw json.malformed('keys[kid=HCLAkPub]', '"n" and "e" must be unpadded base64url')
  let key: KeyObject
  try {
    key = createPublicKey({ key: { kty: 'RSA', n: jwk.n, e: jwk.e }, format: 'jwk' })
  } catch (cause) {
    throw new AttestationError(
      'malformed Azure HCL runtime data: keys[kid=HCLAkPub] is not a usable RSA key',
      {
        cause,
      },
    )
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0
  if (bits < MIN_AK_BITS)
    throw json.malformed('keys[kid=HCLAkPub]', `is a ${bits}-bit RSA key; expected at least ${MIN_AK_BITS}`)
  return key
}

/** What REPORT_DATA holds for this runtime data: SHA-256 of it, zero-padded to 64 bytes. */
export function hclReportData(runtimeData: Buffer): Buffer {
  return Buffer.concat([createHash('sha256').update(runtimeData).digest(), Buffer.alloc(32)])
}

/** REPORT_DATA binds the runtime data: its first 32 bytes are SHA-256(runtime data), the rest zero. */
export function checkHclBinding(reportDataFromHardware: Buffer, runtimeData: Buffer): void {
  if (reportDataFromHardware.length !== 64)
    throw new EvidenceMismatchError(
      'REPORT_DATA length',
      '64',
      String(reportDataFromHardware.length),
      'Azure HCL',
    )
  const digest = hclReportData(runtimeData).subarray(0, 32)
  const head = reportDataFromHardware.subarray(0, 32)
  if (!head.equals(digest))
    throw new EvidenceMismatchError(
      'REPORT_DATA[0:32]',
      `${digest.toString('hex')} (SHA-256 of the runtime data)`,
      head.toString('hex'),
      'Azure HCL',
    )
  const tail = reportDataFromHardware.subarray(32)
  if (tail.some((b) => b !== 0))
    throw new EvidenceMismatchError('REPORT_DATA[32:64]', '32 zero bytes', tail.toString('hex'), 'Azure HCL')
}
