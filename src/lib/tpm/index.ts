/** TPM 2.0 client speaking the command protocol over /dev/tpmrm0 or swtpm's command channel (TCP or unix socket). */
import { pcrExtend, pcrRead, shutdown } from './commands.js'
import type { OpenTpm, TpmTransport } from './transport.js'

export { TpmParseError } from './buffer.js'
export { openTpmDevice, openSwtpm, openSwtpmSocket } from './transport.js'
export type { OpenTpm, TpmConfig } from './transport.js'
export { pcrRead, quote } from './commands.js'
export { readDictionaryAttackState } from './dictionary-attack.js'
export type { DictionaryAttackState } from './dictionary-attack.js'
export { attestationKeyName, withAttestationKey } from './ak.js'
export { verifyTpmSignature } from './signature.js'
export { parseQuoteAttest, parseSignature, parsePublic } from './structures.js'
export type { TpmtPublic } from './structures.js'
export { TPM_ALG, PCR_COUNT, TPMA_OBJECT } from './constants.js'
export {
  readEkCertificate,
  readEkCertificateChain,
  createEndorsementKey,
  withEndorsementKey,
  EkCertificateMissingError,
  EK_KINDS,
  isEkKind,
} from './ek.js'
export type { EkKind, EndorsementKey } from './ek.js'
export {
  createAttestationKeyUnderEk,
  loadAttestationKey,
  withAttestationKeyUnderEk,
  AK_ALGORITHMS,
} from './ek-ak.js'
export type { AttestationKey, AkAlgorithm } from './ek-ak.js'
export { makeCredential, ekPublicKeyFromCertificate, ekPublicKeyFromPublicArea } from './make-credential.js'
export type { EkPublicKey, MadeCredential } from './make-credential.js'
export { activateCredential, CredentialActivationError } from './activate-credential.js'
export { objectName } from './names.js'

/** Opens the TPM, runs fn, and closes it whatever happens. */
export async function withTpm<T>(open: OpenTpm, fn: (t: TpmTransport) => Promise<T>): Promise<T> {
  const t = await open()
  try {
    return await fn(t)
  } finally {
    await t.close()
  }
}

/** SHA-256 bank. */
export function readPcrs(open: OpenTpm, indices: readonly number[]): Promise<Map<number, Buffer>> {
  return withTpm(open, (t) => pcrRead(t, indices))
}

/** TPM2_Shutdown(CLEAR), as an operating system sends it before the power goes off. */
export function shutdownTpm(open: OpenTpm): Promise<void> {
  return withTpm(open, shutdown)
}

/** TPM2_PCR_Extend on the SHA-256 bank with a 32-byte digest. */
export function extendPcr(open: OpenTpm, index: number, digest: Buffer): Promise<void> {
  return withTpm(open, (t) => pcrExtend(t, index, digest))
}
