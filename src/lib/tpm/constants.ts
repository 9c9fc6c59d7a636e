/** TPM 2.0 constants used by this client (TPM 2.0 Library spec, Part 2). */
export const TPM_ST = { NO_SESSIONS: 0x8001, SESSIONS: 0x8002, ATTEST_QUOTE: 0x8018 } as const
export const TPM_GENERATED_VALUE = 0xff544347

export const TPM_CC = {
  ActivateCredential: 0x147,
  PolicySecret: 0x151,
  PolicyOR: 0x171,
  Shutdown: 0x145,
  Create: 0x153,
  Load: 0x157,
  NV_Read: 0x14e,
  NV_DefineSpace: 0x12a,
  NV_UndefineSpace: 0x122,
  NV_Write: 0x137,
  StartAuthSession: 0x176,
  GetCapability: 0x17a,
  Startup: 0x144,
  PCR_Event: 0x13c,
  CreatePrimary: 0x131,
  Quote: 0x158,
  FlushContext: 0x165,
  NV_ReadPublic: 0x169,
  ReadPublic: 0x173,
  GetRandom: 0x17b,
  PCR_Read: 0x17e,
  PCR_Extend: 0x182,
} as const

export const TPM_ALG = {
  RSA: 0x0001,
  SHA1: 0x0004,
  AES: 0x0006,
  SHA256: 0x000b,
  SHA384: 0x000c,
  NULL: 0x0010,
  RSASSA: 0x0014,
  RSAPSS: 0x0016,
  ECDSA: 0x0018,
  ECC: 0x0023,
  CFB: 0x0043,
} as const

export const TPM_ECC_NIST_P256 = 0x0003
export const TPM_ECC_NIST_P384 = 0x0004

export const TPM_RH = { OWNER: 0x40000001, NULL: 0x40000007, ENDORSEMENT: 0x4000000b } as const
/** TPM_SE: the kind of session TPM2_StartAuthSession opens. */
export const TPM_SE_POLICY = 0x01
/** TPMA_SESSION.continueSession: the session stays open after the command. */
export const TPMA_SESSION_CONTINUE = 0x01
/** The password authorization "session" handle. */
export const TPM_RS_PW = 0x40000009
export const TPM_SU_CLEAR = 0x0000

export const TPM_RC = {
  SUCCESS: 0x000,
  /** Startup was already done (swtpm started with startup-clear). */
  INITIALIZE: 0x100,
  YIELDED: 0x908,
  TESTING: 0x90a,
  RETRY: 0x922,
  /** The NV index is defined but was never written. */
  NV_UNINITIALIZED: 0x14a,
} as const

/** TCG EK Credential Profile: NV indices of the EK certificates (RSA 2048, ECC P-256, ECC P-384). */
export const EK_CERT_NV_INDEX = { RSA: 0x01c00002, ECC: 0x01c0000a, ECC_P384: 0x01c00016 } as const
/** TCG EK Credential Profile: the EK certificate chain's indices (0x01C00100-0x01C001FF), in order. */
export const EK_CHAIN_NV_INDEX_FIRST = 0x01c00100
/** TPM_CAP_TPM_PROPERTIES and the property naming the largest NV_Read a TPM serves. */
export const TPM_CAP_TPM_PROPERTIES = 0x00000006
export const TPM_PT_NV_BUFFER_MAX = 0x0000012c
/** The largest NV index the TPM can define (swtpm with libtpms 0.9: 2048 bytes). */
export const TPM_PT_NV_INDEX_MAX = 0x00000117
/** Dictionary-attack properties (TPM_PT_PERMANENT carries TPMA_PERMANENT, whose bit 9 is inLockout). */
export const TPM_PT_DA = {
  PERMANENT: 0x00000200,
  LOCKOUT_COUNTER: 0x0000020e,
  MAX_AUTH_FAIL: 0x0000020f,
  LOCKOUT_INTERVAL: 0x00000210,
  LOCKOUT_RECOVERY: 0x00000211,
} as const
export const TPMA_PERMANENT_IN_LOCKOUT = 1 << 9
/** TPMA_NV bits: who may write and read an index, whether it is DA-protected, whether it was written. */
export const TPMA_NV = {
  OWNERWRITE: 1 << 1,
  AUTHWRITE: 1 << 2,
  OWNERREAD: 1 << 17,
  AUTHREAD: 1 << 18,
  NO_DA: 1 << 25,
  WRITTEN: 1 << 29,
} as const
/** The first and last NV index handles (TPM_HT_NV_INDEX). */
export const NV_INDEX_FIRST = 0x01000000
export const NV_INDEX_LAST = 0x01ffffff

export const PCR_COUNT = 24
export const SHA256_DIGEST_SIZE = 32

/** TPMA_OBJECT bits of restricted signing keys and endorsement keys. */
export const TPMA_OBJECT = {
  fixedTPM: 1 << 1,
  fixedParent: 1 << 4,
  sensitiveDataOrigin: 1 << 5,
  userWithAuth: 1 << 6,
  adminWithPolicy: 1 << 7,
  noDA: 1 << 10,
  restricted: 1 << 16,
  decrypt: 1 << 17,
  sign: 1 << 18,
} as const
