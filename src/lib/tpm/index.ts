/** TPM 2.0 client speaking the command protocol over /dev/tpmrm0 or swtpm's command channel (TCP or unix socket). */
export { withTpm, readPcrs, shutdownTpm, extendPcr } from './pcrs.js'
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
