/**
 * An attestation key created as a child of the EK, as tpm2_createak does: TPM2_Create under the EK,
 * then TPM2_Load, each authorized for the EK. fixedTPM + restricted signing is what makes credential
 * activation against the EK prove the AK lives in that TPM.
 */
import { TpmWriter } from './buffer.js'
import { flushContext, runCommand } from './commands.js'
import { TPM_ALG } from './constants.js'
import { AK_ATTRIBUTES, akTemplate } from './ak.js'
import { withEkAuthorization, type EndorsementKey } from './ek.js'
import { TpmError } from './errors.js'
import { objectName } from './names.js'
import { parsePublic, type TpmtPublic } from './structures.js'
import type { TpmTransport } from './transport.js'

export const AK_ALGORITHMS = ['ecc', 'rsa'] as const
export type AkAlgorithm = (typeof AK_ALGORITHMS)[number]

/** A loaded AK; the caller flushes `handle` (or uses withAttestationKeyUnderEk). */
export interface AttestationKey {
  handle: number
  /** Marshalled TPMT_PUBLIC: what the verifier checks the attributes of and hashes into the Name. */
  publicArea: Buffer
  public: TpmtPublic
  /** nameAlg || H(publicArea): what MakeCredential binds the credential to. */
  name: Buffer
  /** TPM2B_PRIVATE contents: the AK's sensitive area wrapped by the EK; reloads it with loadAttestationKey. */
  privateArea: Buffer
}

/** RSA 2048 RSASSA-SHA256, tpm2_createak's default; ECC is akTemplate() (P-256 ECDSA-SHA256). */
function rsaAkTemplate(): Buffer {
  return new TpmWriter()
    .u16(TPM_ALG.RSA)
    .u16(TPM_ALG.SHA256)
    .u32(AK_ATTRIBUTES)
    .sized(Buffer.alloc(0)) // authPolicy
    .u16(TPM_ALG.NULL) // symmetric
    .u16(TPM_ALG.RSASSA)
    .u16(TPM_ALG.SHA256)
    .u16(2048)
    .u32(0) // exponent: 65537
    .sized(Buffer.alloc(0))
    .toBuffer()
}

/**
 * TPM2_Create under the EK then TPM2_Load. ECC by default: an RSA key takes the TPM hundreds of
 * milliseconds to generate, an ECC key a few.
 */
export async function createAttestationKeyUnderEk(
  t: TpmTransport,
  ek: EndorsementKey,
  algorithm: AkAlgorithm = 'ecc',
): Promise<AttestationKey> {
  const template = algorithm === 'ecc' ? akTemplate() : rsaAkTemplate()
  const params = new TpmWriter()
    .sized(new TpmWriter().sized(Buffer.alloc(0)).sized(Buffer.alloc(0)).toBuffer()) // no auth, no data
    .sized(template)
    .sized(Buffer.alloc(0)) // outsideInfo
    .u32(0) // creationPCR: none
    .toBuffer()
  const { params: r } = await withEkAuthorization(t, ek, (session) =>
    runCommand(t, { name: 'Create', handles: [ek.handle], sessions: [session], params }),
  )
  const privateArea = Buffer.from(r.sized('outPrivate'))
  const publicArea = Buffer.from(r.sized('outPublic'))
  return loadAttestationKey(t, ek, { publicArea, privateArea })
}

/** TPM2_Load of an AK created under this EK (by createAttestationKeyUnderEk, now or on an earlier boot). */
export async function loadAttestationKey(
  t: TpmTransport,
  ek: EndorsementKey,
  blobs: { publicArea: Buffer; privateArea: Buffer },
): Promise<AttestationKey> {
  const pub = parsePublic(blobs.publicArea)
  const params = new TpmWriter().sized(blobs.privateArea).sized(blobs.publicArea).toBuffer()
  const { handles, params: r } = await withEkAuthorization(t, ek, (session) =>
    runCommand(t, { name: 'Load', handles: [ek.handle], sessions: [session], params, responseHandles: 1 }),
  )
  const handle = handles[0]
  if (handle === undefined) throw new TpmError('TPM2_Load returned no handle')
  const name = objectName(blobs.publicArea)
  if (!r.sized('name').equals(name)) {
    await flushContext(t, handle)
    throw new TpmError('TPM2_Load: the TPM names the AK differently than its public area hashes to')
  }
  return { handle, publicArea: blobs.publicArea, public: pub, name, privateArea: blobs.privateArea }
}

/** Creates an AK under the EK, runs fn with it, and always flushes it. */
export async function withAttestationKeyUnderEk<T>(
  t: TpmTransport,
  ek: EndorsementKey,
  fn: (ak: AttestationKey) => Promise<T>,
  algorithm: AkAlgorithm = 'ecc',
): Promise<T> {
  const ak = await createAttestationKeyUnderEk(t, ek, algorithm)
  try {
    return await fn(ak)
  } finally {
    await flushContext(t, ak.handle)
  }
}
