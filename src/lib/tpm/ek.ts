/**
 * The endorsement key as the TCG EK Credential Profile defines it: created from the endorsement
 * seed with the profile's template, so its public key is the one in the manufacturer's EK
 * certificate, which sits in the TPM's NV at the profile's index.
 */
import { TpmParseError, TpmWriter } from './buffer.js'
import { createPrimary, flushContext } from './commands.js'
import {
  EK_CERT_NV_INDEX,
  EK_CHAIN_NV_INDEX_FIRST,
  TPM_ALG,
  TPM_ECC_NIST_P256,
  TPM_ECC_NIST_P384,
  TPM_RH,
  TPMA_OBJECT,
} from './constants.js'
import { CliError } from '../errors/index.js'
import { TpmError } from './errors.js'
import { objectName } from './names.js'
import { isUndefinedIndex, nvReadAll } from './nv.js'
import { withEndorsementPolicy } from './sessions.js'
import type { TpmtPublic } from './structures.js'
import type { TpmTransport } from './transport.js'

/** The profile's templates this client knows: L-1 (RSA 2048), L-2 (ECC P-256), H-3 (ECC P-384). */
export const EK_KINDS = ['rsa2048', 'eccP256', 'eccP384'] as const
export type EkKind = (typeof EK_KINDS)[number]
export const isEkKind = (v: unknown): v is EkKind =>
  typeof v === 'string' && (EK_KINDS as readonly string[]).includes(v)

/** Policy A: PolicySecret(TPM_RH_ENDORSEMENT) under SHA-256 (EK Credential Profile, B.6). */
export const EK_POLICY_A_SHA256 = Buffer.from(
  '837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa',
  'hex',
)
/** Policy B under SHA-384: PolicyOR of policy A and policy C, the high-range templates' policy. */
export const EK_POLICY_B_SHA384 = Buffer.from(
  'b26e7d28d11a50bc53d882bcf5fd3a1a074148bb35d3b4e4cb1c0ad9bde419cacb47ba09699646150f9fc000f3f80e12',
  'hex',
)
/** Policy A under SHA-384: PolicySecret(TPM_RH_ENDORSEMENT), policy B's first branch. */
export const EK_POLICY_A_SHA384 = Buffer.from(
  '8bbf2266537c171cb56e403c4dc1d4b64f432611dc386e6f532050c3278c930e143e8bb1133824ccb431053871c6db53',
  'hex',
)
/** Policy C under SHA-384: PolicyAuthorizeNV of the profile's EK policy index, policy B's second branch. */
export const EK_POLICY_C_SHA384 = Buffer.from(
  'd6032ce61f2fb3c240eb3cf6a33237ef2b6a16f4293c22b455e261cffd217ad5b4947c2d73e63005eed2dc2b3593d165',
  'hex',
)
/** PolicyOR branches of policy B, by the EK's nameAlg (the high-range kinds this client knows). */
const POLICY_B_BRANCHES: ReadonlyMap<number, readonly Buffer[]> = new Map([
  [TPM_ALG.SHA384, [EK_POLICY_A_SHA384, EK_POLICY_C_SHA384]],
])

const A = TPMA_OBJECT
/** fixedTPM | fixedParent | sensitiveDataOrigin | adminWithPolicy | restricted | decrypt */
const LOW_RANGE_ATTRIBUTES =
  A.fixedTPM | A.fixedParent | A.sensitiveDataOrigin | A.adminWithPolicy | A.restricted | A.decrypt
/** High-range templates also set userWithAuth: the (empty) authValue may be used instead of the policy. */
const HIGH_RANGE_ATTRIBUTES = LOW_RANGE_ATTRIBUTES | A.userWithAuth

interface EkProfile {
  certIndex: number
  /** How the certificate names this kind in messages. */
  label: string
  template(): Buffer
}

const PROFILES: Record<EkKind, EkProfile> = {
  rsa2048: {
    certIndex: EK_CERT_NV_INDEX.RSA,
    label: 'RSA 2048',
    template: () =>
      new TpmWriter()
        .u16(TPM_ALG.RSA)
        .u16(TPM_ALG.SHA256)
        .u32(LOW_RANGE_ATTRIBUTES)
        .sized(EK_POLICY_A_SHA256)
        .u16(TPM_ALG.AES)
        .u16(128)
        .u16(TPM_ALG.CFB)
        .u16(TPM_ALG.NULL) // scheme
        .u16(2048)
        .u32(0) // exponent: the default 65537
        .sized(Buffer.alloc(256)) // unique: zeros, as the profile says
        .toBuffer(),
  },
  eccP256: {
    certIndex: EK_CERT_NV_INDEX.ECC,
    label: 'ECC P-256',
    template: () =>
      new TpmWriter()
        .u16(TPM_ALG.ECC)
        .u16(TPM_ALG.SHA256)
        .u32(LOW_RANGE_ATTRIBUTES)
        .sized(EK_POLICY_A_SHA256)
        .u16(TPM_ALG.AES)
        .u16(128)
        .u16(TPM_ALG.CFB)
        .u16(TPM_ALG.NULL) // scheme
        .u16(TPM_ECC_NIST_P256)
        .u16(TPM_ALG.NULL) // kdf
        .sized(Buffer.alloc(32))
        .sized(Buffer.alloc(32))
        .toBuffer(),
  },
  eccP384: {
    certIndex: EK_CERT_NV_INDEX.ECC_P384,
    label: 'ECC P-384',
    template: () =>
      new TpmWriter()
        .u16(TPM_ALG.ECC)
        .u16(TPM_ALG.SHA384)
        .u32(HIGH_RANGE_ATTRIBUTES)
        .sized(EK_POLICY_B_SHA384)
        .u16(TPM_ALG.AES)
        .u16(256)
        .u16(TPM_ALG.CFB)
        .u16(TPM_ALG.NULL) // scheme
        .u16(TPM_ECC_NIST_P384)
        .u16(TPM_ALG.NULL) // kdf
        .sized(Buffer.alloc(0)) // high-range templates leave unique empty
        .sized(Buffer.alloc(0))
        .toBuffer(),
  },
}

export function ekTemplate(kind: EkKind): Buffer {
  return PROFILES[kind].template()
}

export function ekCertificateIndex(kind: EkKind): number {
  return PROFILES[kind].certIndex
}

/** A loaded EK; the caller flushes `handle` (or uses withEndorsementKey). */
export interface EndorsementKey {
  kind: EkKind
  handle: number
  /** Marshalled TPMT_PUBLIC. */
  publicArea: Buffer
  public: TpmtPublic
  /** nameAlg || H(publicArea) */
  name: Buffer
}

/** TPM2_CreatePrimary in the endorsement hierarchy with the profile's template for `kind`. */
export async function createEndorsementKey(t: TpmTransport, kind: EkKind): Promise<EndorsementKey> {
  const created = await createPrimary(t, TPM_RH.ENDORSEMENT, ekTemplate(kind))
  return { kind, ...created, name: objectName(created.publicArea) }
}

/** Creates the EK, runs fn with it, and always flushes it (a TPM without resource manager runs out of slots). */
export async function withEndorsementKey<T>(
  t: TpmTransport,
  kind: EkKind,
  fn: (ek: EndorsementKey) => Promise<T>,
): Promise<T> {
  const ek = await createEndorsementKey(t, kind)
  try {
    return await fn(ek)
  } finally {
    await flushContext(t, ek.handle)
  }
}

/**
 * Runs one command that uses the EK in the USER role (as a parent, or ActivateCredential's key):
 * fn gets the session handle to authorize it with, always a fresh policy session: policy A
 * (PolicySecret(endorsement)) for low-range EKs, policy B (policy A, then PolicyOR(A, C)) for
 * high-range ones. High-range EKs would also take their empty authValue, but the EK's template has
 * no noDA (the certificate fixes it), so an authValue use counts toward dictionary-attack lockout
 * after a power cut; a policy session without PolicyAuthValue uses none (docs/protocol.md §6).
 */
export function withEkAuthorization<T>(
  t: TpmTransport,
  ek: Pick<EndorsementKey, 'public'>,
  fn: (session: number) => Promise<T>,
): Promise<T> {
  const { nameAlg, attributes } = ek.public
  if (!(attributes & TPMA_OBJECT.userWithAuth)) return withEndorsementPolicy(t, nameAlg, fn)
  // an EK whose authPolicy is not policy B fails the command with TPM_RC_POLICY_FAIL
  const branches = POLICY_B_BRANCHES.get(nameAlg)
  if (!branches)
    throw new TpmError(
      `no EK Credential Profile policy B is known for name algorithm 0x${nameAlg.toString(16)}: this client cannot authorize the EK without its authValue`,
    )
  return withEndorsementPolicy(t, nameAlg, fn, branches)
}

/** The TPM carries no EK certificate of this kind: it was not provisioned with one. */
export class EkCertificateMissingError extends CliError {
  constructor(
    readonly kind: EkKind,
    readonly index: number,
  ) {
    super(`the TPM has no ${PROFILES[kind].label} EK certificate at NV index 0x${index.toString(16)}`, {
      hint: 'use a TPM provisioned with an EK certificate by its manufacturer (swtpm: swtpm_setup --create-ek-cert), or an attestation variant that does not need one',
    })
    this.name = 'EkCertificateMissingError'
  }
}

/** The DER EK certificate of `kind` from its NV index; NV padding after the DER is dropped. */
export async function readEkCertificate(t: TpmTransport, kind: EkKind): Promise<Buffer> {
  const index = PROFILES[kind].certIndex
  const data = await nvReadAll(t, index).catch((err: unknown) => {
    if (err instanceof TpmError && err.responseCode !== undefined && isUndefinedIndex(err.responseCode))
      throw new EkCertificateMissingError(kind, index)
    throw new TpmError(`reading the EK certificate at NV index 0x${index.toString(16)}`, undefined, {
      cause: err,
    })
  })
  return data.subarray(0, derLength(data, index))
}

/**
 * The intermediate certificates the manufacturer stored beside the EK certificate: the profile's
 * chain indices from 0x01C00100 on, read until the first undefined one; an index may hold several
 * DER certificates back to back. Most TPMs store none (the manufacturer publishes them instead).
 * At most `max` certificates: a verifier refuses longer chains anyway.
 */
export async function readEkCertificateChain(t: TpmTransport, max: number): Promise<Buffer[]> {
  const certs: Buffer[] = []
  for (let index = EK_CHAIN_NV_INDEX_FIRST; certs.length <= max; index++) {
    let data: Buffer
    try {
      data = await nvReadAll(t, index)
    } catch (err: unknown) {
      if (err instanceof TpmError && err.responseCode !== undefined && isUndefinedIndex(err.responseCode))
        return certs
      throw new TpmError(`reading the EK certificate chain at NV index 0x${index.toString(16)}`, undefined, {
        cause: err,
      })
    }
    const before = certs.length
    for (let offset = 0; offset < data.length && data[offset] === 0x30;) {
      const length = derLength(data.subarray(offset), index)
      certs.push(data.subarray(offset, offset + length))
      offset += length
    }
    if (certs.length === before)
      throw new TpmParseError(
        `EK certificate chain at NV index 0x${index.toString(16)}: holds no DER certificate`,
      )
  }
  throw new TpmParseError(`EK certificate chain: the TPM holds more than ${max} intermediate certificates`)
}

/** Length of the DER SEQUENCE at the start of data (header included). */
function derLength(data: Buffer, index: number): number {
  const fail = (why: string): never => {
    throw new TpmParseError(`EK certificate at NV index 0x${index.toString(16)}: ${why}`)
  }
  if (data.length < 2 || data[0] !== 0x30) return fail('does not start with a DER SEQUENCE')
  const first = data[1] ?? 0
  const lengthBytes = first < 0x80 ? 0 : first & 0x7f
  if (first === 0x80 || lengthBytes > 3 || data.length < 2 + lengthBytes)
    return fail('has an unusable DER length')
  const length = first < 0x80 ? first : data.subarray(2, 2 + lengthBytes).reduce((n, b) => n * 256 + b, 0)
  const total = 2 + lengthBytes + length
  if (total > data.length) return fail(`DER says ${total} bytes, the index holds ${data.length}`)
  return total
}
