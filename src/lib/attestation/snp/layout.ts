/**
 * Where each field sits in the SEV-SNP ATTESTATION_REPORT (AMD SEV-SNP ABI spec, pub. 56860, table
 * "ATTESTATION_REPORT Structure"): byte offsets, all integers little-endian. The parser reads with
 * these and the stand-in writes with them, so both agree on one table.
 */
export const REPORT_SIZE = 0x4a0
/** The signature covers bytes 0x000–0x29F. */
export const SIGNED_LENGTH = 0x2a0

export const OFFSET = {
  version: 0x00,
  guestSvn: 0x04,
  policy: 0x08,
  familyId: 0x10,
  imageId: 0x20,
  vmpl: 0x30,
  signatureAlgo: 0x34,
  currentTcb: 0x38,
  platformInfo: 0x40,
  signerInfo: 0x48,
  reportData: 0x50,
  measurement: 0x90,
  hostData: 0xc0,
  idKeyDigest: 0xe0,
  authorKeyDigest: 0x110,
  reportId: 0x140,
  reportIdMa: 0x160,
  reportedTcb: 0x180,
  /** Version 3 and later: CPUID family, model, stepping (one byte each). */
  cpuidFamily: 0x188,
  chipId: 0x1a0,
  committedTcb: 0x1e0,
  currentBuild: 0x1e8,
  committedBuild: 0x1ec,
  launchTcb: 0x1f0,
  /** Version 5 and later; reserved (zero) before. */
  launchMitVector: 0x1f8,
  currentMitVector: 0x200,
  signatureR: 0x2a0,
  signatureS: 0x2e8,
} as const

export const SIZE = {
  familyId: 16,
  imageId: 16,
  reportData: 64,
  measurement: 48,
  hostData: 32,
  idKeyDigest: 48,
  authorKeyDigest: 48,
  reportId: 32,
  reportIdMa: 32,
  chipId: 64,
  /** r and s are each 72 bytes, little-endian; a P-384 value fills the low 48. */
  signatureComponent: 72,
  p384Component: 48,
} as const

/** Ranges that must be zero, as [start, end) with the name the refusal gives. */
export const RESERVED: readonly { start: number; end: number; name: string }[] = [
  { start: 0x4c, end: 0x50, name: 'reserved after SIGNER_INFO' },
  { start: 0x1eb, end: 0x1ec, name: 'reserved after CURRENT_MAJOR' },
  { start: 0x1ef, end: 0x1f0, name: 'reserved after COMMITTED_MAJOR' },
  { start: 0x208, end: 0x2a0, name: 'reserved before SIGNATURE' },
  { start: 0x2a0 + 48, end: 0x2e8, name: 'SIGNATURE.R high bytes' },
  { start: 0x2e8 + 48, end: 0x330, name: 'SIGNATURE.S high bytes' },
  { start: 0x330, end: REPORT_SIZE, name: 'reserved after SIGNATURE' },
]

/** GUEST_POLICY bits (ABI spec, table "GUEST_POLICY Structure"). */
export const POLICY_BIT = {
  smt: 16,
  /** Reserved, must be one. */
  reservedOne: 17,
  migrateMa: 18,
  debug: 19,
  singleSocket: 20,
  cxlAllow: 21,
  memAes256Xts: 22,
  raplDis: 23,
  ciphertextHiding: 24,
  pageSwapDisable: 25,
} as const
/** Bits 63–26 of the policy are reserved, must be zero. */
export const POLICY_KNOWN_BITS = 26

/** SIGNATURE_ALGO 1: ECDSA P-384 with SHA-384, the only one SEV firmware uses. */
export const SIGNATURE_ALGO_ECDSA_P384_SHA384 = 1
/** SIGNER_INFO.SIGNING_KEY (bits 4:2): 0 VCEK, 1 VLEK, 7 none; 2–6 reserved. */
export const SIGNING_KEY = { VCEK: 0, VLEK: 1, none: 7 } as const
