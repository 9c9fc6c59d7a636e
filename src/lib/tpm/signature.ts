/** Checks a TPMT_SIGNATURE with node:crypto against the signer's TPMT_PUBLIC. */
import { constants, verify } from 'node:crypto'
import { TpmParseError } from './buffer.js'
import { TPM_ALG } from './constants.js'
import { publicKeyOf, type TpmtPublic, type TpmtSignature } from './structures.js'

const HASH_NAMES: Record<number, string> = { [TPM_ALG.SHA256]: 'sha256', [TPM_ALG.SHA384]: 'sha384' }

/** True when sig is a valid signature of message by the key; SHA-1 and mismatched key types are refused. */
export function verifyTpmSignature(pub: TpmtPublic, message: Buffer, sig: TpmtSignature): boolean {
  const hash = HASH_NAMES[sig.hashAlg]
  if (hash === undefined)
    throw new TpmParseError(`TPMT_SIGNATURE: hash algorithm 0x${sig.hashAlg.toString(16)} is not accepted`)
  // a key bound to a scheme signs only with that scheme; anything else is not this key's signature
  if (
    pub.scheme.alg !== TPM_ALG.NULL &&
    (pub.scheme.alg !== sig.sigAlg || pub.scheme.hashAlg !== sig.hashAlg)
  )
    return false
  const key = publicKeyOf(pub)
  if (sig.sigAlg === TPM_ALG.ECDSA) {
    if (pub.type !== TPM_ALG.ECC)
      throw new TpmParseError('TPMT_SIGNATURE: ECDSA signature from a non-ECC key')
    if (sig.r.length > 32 || sig.s.length > 32) return false
    // TPM2B r and s may drop leading zeros; IEEE P1363 wants both fixed at 32 bytes
    const p1363 = Buffer.concat([
      Buffer.alloc(32 - sig.r.length),
      sig.r,
      Buffer.alloc(32 - sig.s.length),
      sig.s,
    ])
    return verify(hash, message, { key, dsaEncoding: 'ieee-p1363' }, p1363)
  }
  if (pub.type !== TPM_ALG.RSA) throw new TpmParseError('TPMT_SIGNATURE: RSA signature from a non-RSA key')
  const padding =
    sig.sigAlg === TPM_ALG.RSAPSS ? constants.RSA_PKCS1_PSS_PADDING : constants.RSA_PKCS1_PADDING
  return verify(hash, message, { key, padding, saltLength: constants.RSA_PSS_SALTLEN_AUTO }, sig.signature)
}
