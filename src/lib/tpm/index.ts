/** TPM 2.0 client speaking the command protocol over /dev/tpmrm0 or swtpm's command channel (TCP or unix socket). */
export { withTpm, readPcrs, shutdownTpm, extendPcr } from './pcrs.js'
export { TpmParseError } from './buffer.js'
export { openTpmDevice, openSwtpm, openSwtpmSocket } from './transport.js'
export type { OpenTpm, TpmConfig, TpmTransport } from './transport.js'
export { pcrRead, quote, readPublicArea } from './commands.js'

export { attestationKeyName, withAttestationKey } from './ak.js'
export { verifyTpmSignature } from './signature.js'
export { parseQuoteAttest, parseSignature, parsePublic, publicKeyOf } from './structures.js'
export type { TpmtPublic } from './structures.js'
export { TPM_ALG, PCR_COUNT, TPMA_OBJECT } from './constants.js'
export {
  readEkCertificate,
  readEkCertificateChain,
  withEndorsementKey,
  EkCertificateMissingError,
} from './ek.js'
export type { EkKind } from './ek.js'

export { makeCredential, ekPublicKeyFromCertificate } from './make-credential.js'
export type { EkPublicKey, MadeCredential } from './make-credential.js'
export { activateCredential } from './activate-credential.js'
export { objectName } from './names.js'
export { readNvIndex } from './nv-index.js'
