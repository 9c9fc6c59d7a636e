/**
 * parseSnpReport: the 1184-byte SEV-SNP ATTESTATION_REPORT as typed fields. It checks the shape
 * (size, version, reserved bytes) and nothing about trust: verifySnpEvidence does that.
 */
import { AttestationError } from '../errors.js'
import {
  OFFSET,
  POLICY_BIT,
  POLICY_KNOWN_BITS,
  REPORT_SIZE,
  RESERVED,
  SIGNATURE_ALGO_ECDSA_P384_SHA384,
  SIGNED_LENGTH,
  SIGNING_KEY,
  SIZE,
} from './layout.js'

/** Security patch levels of one TCB_VERSION (Milan/Genoa layout: bytes 0, 1, 6, 7). */
export interface SnpTcb {
  bootloader: number
  tee: number
  snp: number
  microcode: number
  /** The eight bytes as the report holds them, for messages and exact comparisons. */
  raw: bigint
}

export interface SnpGuestPolicy {
  abiMinor: number
  abiMajor: number
  smt: boolean
  migrateMa: boolean
  debug: boolean
  singleSocket: boolean
  cxlAllow: boolean
  memAes256Xts: boolean
  raplDis: boolean
  ciphertextHiding: boolean
  pageSwapDisable: boolean
}

export type SnpSigningKey = 'VCEK' | 'VLEK' | 'none'

export interface SnpReport {
  version: 2 | 3 | 5
  guestSvn: number
  policy: bigint
  policyBits: SnpGuestPolicy
  familyId: Buffer
  imageId: Buffer
  vmpl: number
  signatureAlgo: number
  currentTcb: SnpTcb
  platformInfo: bigint
  signerInfo: { signingKey: SnpSigningKey; maskChipKey: boolean; authorKeyEn: boolean }
  reportData: Buffer
  measurement: Buffer
  hostData: Buffer
  idKeyDigest: Buffer
  authorKeyDigest: Buffer
  reportId: Buffer
  reportIdMa: Buffer
  reportedTcb: SnpTcb
  /** Version 3 and later; undefined in version 2. */
  cpuid?: { family: number; model: number; stepping: number }
  chipId: Buffer
  committedTcb: SnpTcb
  current: { build: number; minor: number; major: number }
  committed: { build: number; minor: number; major: number }
  launchTcb: SnpTcb
  /** Version 5 and later; undefined before. */
  mitigationVectors?: { launch: bigint; current: bigint }
  /** Big-endian P-384 r and s (48 bytes each), converted from the report's little-endian fields. */
  signature: { r: Buffer; s: Buffer }
  /** Bytes 0x000–0x29F: what the signature covers. */
  signedBytes: Buffer
}

const SUPPORTED_VERSIONS: readonly number[] = [2, 3, 5]
const malformed = (why: string) => new AttestationError(`malformed SEV-SNP report: ${why}`)

export function parseSnpReport(raw: Buffer): SnpReport {
  if (raw.length !== REPORT_SIZE)
    throw malformed(`size is ${raw.length} bytes, expected ${REPORT_SIZE} (0x${REPORT_SIZE.toString(16)})`)
  const version = raw.readUInt32LE(OFFSET.version)
  if (!SUPPORTED_VERSIONS.includes(version))
    throw malformed(
      `VERSION (offset 0x00) is ${version}; versions ${SUPPORTED_VERSIONS.join(', ')} are supported`,
    )
  const signatureAlgo = raw.readUInt32LE(OFFSET.signatureAlgo)
  checkReserved(raw, version, signatureAlgo)
  const policy = raw.readBigUInt64LE(OFFSET.policy)
  const bytes = (offset: number, size: number) => Buffer.from(raw.subarray(offset, offset + size))
  return {
    version: version as 2 | 3 | 5,
    guestSvn: raw.readUInt32LE(OFFSET.guestSvn),
    policy,
    policyBits: decodePolicy(policy),
    familyId: bytes(OFFSET.familyId, SIZE.familyId),
    imageId: bytes(OFFSET.imageId, SIZE.imageId),
    vmpl: raw.readUInt32LE(OFFSET.vmpl),
    signatureAlgo,
    currentTcb: decodeTcb(raw, OFFSET.currentTcb),
    platformInfo: raw.readBigUInt64LE(OFFSET.platformInfo),
    signerInfo: decodeSignerInfo(raw.readUInt32LE(OFFSET.signerInfo)),
    reportData: bytes(OFFSET.reportData, SIZE.reportData),
    measurement: bytes(OFFSET.measurement, SIZE.measurement),
    hostData: bytes(OFFSET.hostData, SIZE.hostData),
    idKeyDigest: bytes(OFFSET.idKeyDigest, SIZE.idKeyDigest),
    authorKeyDigest: bytes(OFFSET.authorKeyDigest, SIZE.authorKeyDigest),
    reportId: bytes(OFFSET.reportId, SIZE.reportId),
    reportIdMa: bytes(OFFSET.reportIdMa, SIZE.reportIdMa),
    reportedTcb: decodeTcb(raw, OFFSET.reportedTcb),
    cpuid:
      version >= 3
        ? {
            family: raw[OFFSET.cpuidFamily] ?? 0,
            model: raw[OFFSET.cpuidFamily + 1] ?? 0,
            stepping: raw[OFFSET.cpuidFamily + 2] ?? 0,
          }
        : undefined,
    chipId: bytes(OFFSET.chipId, SIZE.chipId),
    committedTcb: decodeTcb(raw, OFFSET.committedTcb),
    current: buildVersion(raw, OFFSET.currentBuild),
    committed: buildVersion(raw, OFFSET.committedBuild),
    launchTcb: decodeTcb(raw, OFFSET.launchTcb),
    mitigationVectors:
      version >= 5
        ? {
            launch: raw.readBigUInt64LE(OFFSET.launchMitVector),
            current: raw.readBigUInt64LE(OFFSET.currentMitVector),
          }
        : undefined,
    signature: {
      r: littleToBigEndian(raw.subarray(OFFSET.signatureR, OFFSET.signatureR + SIZE.p384Component)),
      s: littleToBigEndian(raw.subarray(OFFSET.signatureS, OFFSET.signatureS + SIZE.p384Component)),
    },
    signedBytes: bytes(0, SIGNED_LENGTH),
  }
}

/** TCB_VERSION as Milan and Genoa lay it out: bootloader, TEE, reserved ×4, SNP, microcode. */
export function decodeTcb(raw: Buffer, offset: number): SnpTcb {
  return {
    bootloader: raw[offset] ?? 0,
    tee: raw[offset + 1] ?? 0,
    snp: raw[offset + 6] ?? 0,
    microcode: raw[offset + 7] ?? 0,
    raw: raw.readBigUInt64LE(offset),
  }
}

/** Reversed copy: the report stores r and s little-endian, node:crypto wants big-endian. */
export function littleToBigEndian(le: Uint8Array): Buffer {
  return Buffer.from(le).reverse()
}

function checkReserved(raw: Buffer, version: number, signatureAlgo: number): void {
  const ranges = [
    ...RESERVED.filter((r) => signatureAlgo === SIGNATURE_ALGO_ECDSA_P384_SHA384 || r.start < SIGNED_LENGTH),
    // CPUID bytes exist from version 3, the mitigation vectors from version 5
    {
      start: version >= 3 ? OFFSET.cpuidFamily + 3 : OFFSET.cpuidFamily,
      end: OFFSET.chipId,
      name: 'reserved before CHIP_ID',
    },
    ...(version < 5
      ? [{ start: OFFSET.launchMitVector, end: 0x208, name: 'reserved before version 5' }]
      : []),
  ]
  for (const { start, end, name } of ranges) {
    const at = raw.subarray(start, end).findIndex((b) => b !== 0)
    if (at >= 0)
      throw malformed(
        `${name} (offset 0x${(start + at).toString(16)}) must be zero, found 0x${(raw[start + at] ?? 0).toString(16)}`,
      )
  }
  const policy = raw.readBigUInt64LE(OFFSET.policy)
  if ((policy >> BigInt(POLICY_BIT.reservedOne)) % 2n !== 1n)
    throw malformed(
      `POLICY (offset 0x08) bit ${POLICY_BIT.reservedOne} is reserved and must be one; policy is 0x${policy.toString(16)}`,
    )
  if (policy >> BigInt(POLICY_KNOWN_BITS) !== 0n)
    throw malformed(
      `POLICY (offset 0x08) bits 63–${POLICY_KNOWN_BITS} are reserved and must be zero; policy is 0x${policy.toString(16)}`,
    )
  const signer = raw.readUInt32LE(OFFSET.signerInfo)
  if (signer >>> 5 !== 0)
    throw malformed(
      `SIGNER_INFO (offset 0x48) bits 31–5 are reserved and must be zero; found 0x${signer.toString(16)}`,
    )
  const key = (signer >>> 2) & 7
  if (key !== SIGNING_KEY.VCEK && key !== SIGNING_KEY.VLEK && key !== SIGNING_KEY.none)
    throw malformed(`SIGNER_INFO.SIGNING_KEY (offset 0x48, bits 4–2) is ${key}, a reserved value`)
}

function decodePolicy(policy: bigint): SnpGuestPolicy {
  const bit = (n: number) => (policy >> BigInt(n)) % 2n === 1n
  return {
    abiMinor: Number(policy & 0xffn),
    abiMajor: Number((policy >> 8n) & 0xffn),
    smt: bit(POLICY_BIT.smt),
    migrateMa: bit(POLICY_BIT.migrateMa),
    debug: bit(POLICY_BIT.debug),
    singleSocket: bit(POLICY_BIT.singleSocket),
    cxlAllow: bit(POLICY_BIT.cxlAllow),
    memAes256Xts: bit(POLICY_BIT.memAes256Xts),
    raplDis: bit(POLICY_BIT.raplDis),
    ciphertextHiding: bit(POLICY_BIT.ciphertextHiding),
    pageSwapDisable: bit(POLICY_BIT.pageSwapDisable),
  }
}

function decodeSignerInfo(info: number): SnpReport['signerInfo'] {
  const key = (info >>> 2) & 7
  const signingKey: SnpSigningKey =
    key === SIGNING_KEY.VCEK ? 'VCEK' : key === SIGNING_KEY.VLEK ? 'VLEK' : 'none'
  return { signingKey, maskChipKey: (info & 2) !== 0, authorKeyEn: (info & 1) !== 0 }
}

function buildVersion(raw: Buffer, offset: number): { build: number; minor: number; major: number } {
  return { build: raw[offset] ?? 0, minor: raw[offset + 1] ?? 0, major: raw[offset + 2] ?? 0 }
}
