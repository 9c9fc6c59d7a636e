/**
 * Byte layouts of Intel's TDX structures (Intel TDX DCAP Quote Generation Library and Quote
 * Verification Library API, quote format v4; Intel TDX Module ABI spec for TDREPORT_STRUCT).
 * All integers are little-endian.
 */
import type { FieldSpec } from './bytes.js'

export const QUOTE_VERSION_V4 = 4
/** ECDSA-256-with-P-256: the only attestation key type TDX quotes use. */
export const ATTESTATION_KEY_TYPE_ECDSA_P256 = 2
export const TEE_TYPE_TDX = 0x81
/** Certification data type 6: the QE report certification data (QE report, its signature, auth data, inner data). */
export const CERT_DATA_QE_REPORT = 6
/** Certification data type 5: the PCK certificate chain as concatenated PEM (leaf, intermediate, root). */
export const CERT_DATA_PCK_CHAIN = 5

export const HEADER_SIZE = 48
export const TD_QUOTE_BODY_SIZE = 584
export const SGX_REPORT_BODY_SIZE = 384
export const ECDSA_SIGNATURE_SIZE = 64
export const ECDSA_KEY_SIZE = 64
export const TD_REPORT_SIZE = 1024
export const RTMR_COUNT = 4
export const MEASUREMENT_SIZE = 48
export const REPORT_DATA_SIZE = 64
export const TEE_TCB_SVN_SIZE = 16

/** Where the signed data's length sits: right after header and body. */
export const SIGNED_DATA_SIZE_OFFSET = HEADER_SIZE + TD_QUOTE_BODY_SIZE
export const SIGNED_DATA_OFFSET = SIGNED_DATA_SIZE_OFFSET + 4

export const HEADER = {
  version: { name: 'header.version', offset: 0, size: 2 },
  attestationKeyType: { name: 'header.attestationKeyType', offset: 2, size: 2 },
  teeType: { name: 'header.teeType', offset: 4, size: 4 },
  qeSvn: { name: 'header.qeSvn', offset: 8, size: 2 },
  pceSvn: { name: 'header.pceSvn', offset: 10, size: 2 },
  qeVendorId: { name: 'header.qeVendorId', offset: 12, size: 16 },
  userData: { name: 'header.userData', offset: 28, size: 20 },
} as const satisfies Record<string, FieldSpec>

const m = MEASUREMENT_SIZE
/** TD quote body v4 (TD 1.0), offsets relative to the body. */
export const BODY_FIELDS: readonly FieldSpec[] = [
  { name: 'teeTcbSvn', offset: 0, size: 16 },
  { name: 'mrSeam', offset: 16, size: m },
  { name: 'mrSignerSeam', offset: 64, size: m },
  { name: 'seamAttributes', offset: 112, size: 8 },
  { name: 'tdAttributes', offset: 120, size: 8 },
  { name: 'xfam', offset: 128, size: 8 },
  { name: 'mrTd', offset: 136, size: m },
  { name: 'mrConfigId', offset: 184, size: m },
  { name: 'mrOwner', offset: 232, size: m },
  { name: 'mrOwnerConfig', offset: 280, size: m },
  { name: 'rtmr0', offset: 328, size: m },
  { name: 'rtmr1', offset: 376, size: m },
  { name: 'rtmr2', offset: 424, size: m },
  { name: 'rtmr3', offset: 472, size: m },
  { name: 'reportData', offset: 520, size: 64 },
]

/** SGX REPORTBODY of the quoting enclave, offsets relative to the report. */
export const SGX_REPORT_FIELDS: readonly FieldSpec[] = [
  { name: 'cpuSvn', offset: 0, size: 16 },
  { name: 'miscSelect', offset: 16, size: 4 },
  { name: 'attributes', offset: 48, size: 16 },
  { name: 'mrEnclave', offset: 64, size: 32 },
  { name: 'mrSigner', offset: 128, size: 32 },
  { name: 'isvProdId', offset: 256, size: 2 },
  { name: 'isvSvn', offset: 258, size: 2 },
  { name: 'reportData', offset: 320, size: 64 },
]

/**
 * TDREPORT_STRUCT: REPORTMACSTRUCT (0–255), TEE_TCB_INFO (256–494), reserved, TDINFO (512–1023).
 * TEE_TCB_INFO_HASH is SHA-384 of the 239 bytes of TEE_TCB_INFO, TEE_INFO_HASH SHA-384 of TDINFO.
 */
export const TD_REPORT_FIELDS: readonly FieldSpec[] = [
  { name: 'reportType', offset: 0, size: 4 },
  { name: 'cpuSvn', offset: 16, size: 16 },
  { name: 'teeTcbInfoHash', offset: 32, size: 48 },
  { name: 'teeInfoHash', offset: 80, size: 48 },
  { name: 'reportData', offset: 128, size: 64 },
  { name: 'mac', offset: 224, size: 32 },
  { name: 'teeTcbInfoValid', offset: 256, size: 8 },
  { name: 'teeTcbSvn', offset: 264, size: 16 },
  { name: 'mrSeam', offset: 280, size: m },
  { name: 'mrSignerSeam', offset: 328, size: m },
  { name: 'seamAttributes', offset: 376, size: 8 },
  /** TDX 1.5 only; zero on TDX 1.0 modules. */
  { name: 'teeTcbSvn2', offset: 384, size: 16 },
  { name: 'tdAttributes', offset: 512, size: 8 },
  { name: 'xfam', offset: 520, size: 8 },
  { name: 'mrTd', offset: 528, size: m },
  { name: 'mrConfigId', offset: 576, size: m },
  { name: 'mrOwner', offset: 624, size: m },
  { name: 'mrOwnerConfig', offset: 672, size: m },
  { name: 'rtmr0', offset: 720, size: m },
  { name: 'rtmr1', offset: 768, size: m },
  { name: 'rtmr2', offset: 816, size: m },
  { name: 'rtmr3', offset: 864, size: m },
  /** TDX 1.5 only. */
  { name: 'servTdHash', offset: 912, size: m },
]
export const TEE_TCB_INFO = { offset: 256, size: 239 } as const
export const TD_INFO = { offset: 512, size: 512 } as const
/** REPORTTYPE.TYPE of a TD report. */
export const REPORT_TYPE_TDX = 0x81

/** TDATTRIBUTES bit 0: the TD runs in debug mode and its memory is readable by the host. */
export const TD_ATTRIBUTE_DEBUG = 0x01
