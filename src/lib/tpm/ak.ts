/** The attestation key: a restricted ECC P-256 signing key under the endorsement hierarchy. */
import { TpmWriter } from './buffer.js'
import { TPM_ALG, TPM_ECC_NIST_P256, TPM_RH, TPMA_OBJECT } from './constants.js'
import { createPrimary, flushContext, type CreatedPrimary } from './commands.js'
import { objectName } from './names.js'
import type { TpmTransport } from './transport.js'

/**
 * The attributes of every attestation key: a restricted signing key that never leaves its TPM, used
 * with its empty authValue, and noDA as Constellation's (go-tpm-tools') AK templates: a key used
 * with an authValue on every boot would otherwise count as a dictionary-attack failure at each
 * startup after a power cut, and lock the TPM out after a few (docs/protocol.md §6).
 */
export const AK_ATTRIBUTES =
  TPMA_OBJECT.fixedTPM |
  TPMA_OBJECT.fixedParent |
  TPMA_OBJECT.sensitiveDataOrigin |
  TPMA_OBJECT.userWithAuth |
  TPMA_OBJECT.noDA |
  TPMA_OBJECT.restricted |
  TPMA_OBJECT.sign

/**
 * Deterministic template (no unique, no auth), so the TPM derives the same AK from its endorsement
 * seed every time. ECC P-256 rather than RSA-2048: deriving an RSA primary takes the TPM hundreds of
 * milliseconds per handshake, an ECC primary a few.
 */
export function akTemplate(): Buffer {
  return new TpmWriter()
    .u16(TPM_ALG.ECC)
    .u16(TPM_ALG.SHA256)
    .u32(AK_ATTRIBUTES)
    .sized(Buffer.alloc(0)) // authPolicy
    .u16(TPM_ALG.NULL) // symmetric
    .u16(TPM_ALG.ECDSA)
    .u16(TPM_ALG.SHA256)
    .u16(TPM_ECC_NIST_P256)
    .u16(TPM_ALG.NULL) // kdf
    .sized(Buffer.alloc(0))
    .sized(Buffer.alloc(0))
    .toBuffer()
}

/** Creates the AK, runs fn with it, and always flushes it (a TPM without resource manager runs out of slots). */
export async function withAttestationKey<T>(
  t: TpmTransport,
  fn: (ak: CreatedPrimary) => Promise<T>,
): Promise<T> {
  const ak = await createPrimary(t, TPM_RH.ENDORSEMENT, akTemplate())
  try {
    return await fn(ak)
  } finally {
    await flushContext(t, ak.handle)
  }
}

/** The AK's Name: what a verifier records to know this TPM again (the AK derives from its endorsement seed). */
export function attestationKeyName(t: TpmTransport): Promise<Buffer> {
  return withAttestationKey(t, async (ak) => objectName(ak.publicArea))
}
