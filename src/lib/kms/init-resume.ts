/**
 * What a resumed init proves about the master secret, without carrying it: an HMAC under a key
 * derived from the master secret, over the certificate key of the one attested handshake it is
 * sent on. A server that posed as the node learns a MAC over its own key, which the node never
 * attested and so refuses; the master secret itself never leaves the operator's machine again.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { deriveKey } from './hkdf.js'
import type { MasterSecret } from './master-secret.js'

/** SHA-256 of the attested certificate key (the attestation's userData), then the MAC. */
export const RESUME_PROOF_BYTES = 64
const ATTESTED_KEY_BYTES = 32

// Outside the `key-<id>` names: the key service derives any `key-<id>` for whoever asks it, and
// must never be able to hand out this one.
const RESUME_KEY_INFO = 'constellation init resume'
const MAC_CONTEXT = Buffer.from('constellation init resume proof v1\0')

/** HKDF(master key, master salt, "constellation init resume"): the node keeps it until a resume fetched its answer. */
export function deriveResumeKey(master: MasterSecret): Buffer {
  return deriveKey(master.key, master.salt, RESUME_KEY_INFO)
}

/** The proof for a handshake whose attestation named `attestedKey` (SHA-256 of the node certificate's key). */
export function resumeProof(resumeKey: Buffer, attestedKey: Buffer): Buffer {
  if (attestedKey.length !== ATTESTED_KEY_BYTES)
    throw new Error(`attested key hash is ${attestedKey.length} bytes, want ${ATTESTED_KEY_BYTES}`)
  return Buffer.concat([attestedKey, mac(resumeKey, attestedKey)])
}

/** The certificate key a proof is bound to; undefined when the proof is not RESUME_PROOF_BYTES long. */
export function resumeProofKey(proof: Buffer): Buffer | undefined {
  return proof.length === RESUME_PROOF_BYTES ? proof.subarray(0, ATTESTED_KEY_BYTES) : undefined
}

/** True when `proof` was made with `resumeKey` (constant-time compare). */
export function resumeProofMatches(resumeKey: Buffer, proof: Buffer): boolean {
  const attestedKey = resumeProofKey(proof)
  if (!attestedKey) return false
  return timingSafeEqual(proof.subarray(ATTESTED_KEY_BYTES), mac(resumeKey, attestedKey))
}

function mac(resumeKey: Buffer, attestedKey: Buffer): Buffer {
  return createHmac('sha256', resumeKey).update(MAC_CONTEXT).update(attestedKey).digest()
}
