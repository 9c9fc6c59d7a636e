/** The verifier's nonce travels as standard base64 (with padding) in a TLS field the peer sees first. */
import { AttestationError } from '../attestation/index.js'

export const NONCE_BYTES = 32

export const encodeNonce = (nonce: Buffer): string => nonce.toString('base64')

export function decodeNonce(text: string | undefined, where: string): Buffer {
  const ok = text !== undefined && /^[A-Za-z0-9+/]{43}=$/.test(text)
  if (!ok) throw new AttestationError(`${where} does not carry a ${NONCE_BYTES}-byte base64 nonce`)
  return Buffer.from(text, 'base64')
}
