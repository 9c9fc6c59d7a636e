/** Recognising refused attestations, also after grpc-js turned them into a failed call's details. */
import { AttestationError } from '../attestation/index.js'
import { messageOf } from '../errors/index.js'
import { withoutRpcInternals } from '../grpc/index.js'

/** Every refusal raised inside an aTLS handshake starts with this, so it survives grpc-js' error text. */
export const REFUSAL_PREFIX = 'attestation refused: '

export function refusal(cause: unknown): AttestationError {
  const message = cause instanceof Error ? cause.message : String(cause)
  return new AttestationError(REFUSAL_PREFIX + message, { cause })
}

/** True when a failed gRPC call (or any error) failed because the peer's attestation was refused (never retry those). */
export function isAttestationFailure(err: unknown): boolean {
  for (let cur: unknown = err, depth = 0; cur !== undefined && cur !== null && depth < 10; depth++) {
    if (cur instanceof AttestationError) return true
    const text =
      typeof cur === 'object'
        ? [(cur as { details?: unknown }).details, (cur as { message?: unknown }).message]
        : [cur]
    if (text.some((t) => typeof t === 'string' && t.includes(REFUSAL_PREFIX))) return true
    cur = cur instanceof Error ? cur.cause : undefined
  }
  return false
}

/** The validator's own words (`attestation refused: …`), without what grpc-js wrapped around them. */
export function attestationRefusalOf(err: unknown): string {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 10; cur = cur.cause, depth++) {
    for (const text of [(cur as { details?: unknown }).details, cur.message])
      if (typeof text === 'string' && text.includes(REFUSAL_PREFIX))
        return withoutRpcInternals(text.slice(text.indexOf(REFUSAL_PREFIX)))
  }
  return withoutRpcInternals(messageOf(err))
}
