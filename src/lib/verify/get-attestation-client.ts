/**
 * `verify --protocol get-attestation`: asks a node for its attestation through Constellation's
 * plain-gRPC verify.API/GetAttestation with a fresh nonce, and validates the answer with the same
 * validator the attested-TLS path uses. Plain gRPC hides nothing and proves nothing by itself: the
 * trust comes only from the document, checked against our own nonce.
 */
import * as grpc from '@grpc/grpc-js'
import { randomBytes } from 'node:crypto'
import { APIClient } from '../../gen/verify.js'
import { AttestationError, type ValidationResult, type Validator } from '../attestation/index.js'
import { MIN_NONCE_BYTES, VERIFY_SERVICE_USER_DATA } from './get-attestation-server.js'

/** How `verify` reaches a node: attested TLS (the default) or Constellation's GetAttestation RPC. */
export const VERIFY_PROTOCOLS = ['atls', 'get-attestation'] as const
export type VerifyProtocol = (typeof VERIFY_PROTOCOLS)[number]

/** An attestation document is at most 1 MiB (document.ts); the rest is protobuf framing. */
const MAX_RESPONSE_BYTES = (1 << 20) + 1024

/** What the caller learns of the check (the same record the aTLS path fills). */
export interface AttestationSeen {
  refusal?: unknown
  verified?: ValidationResult
}

/** Calls GetAttestation at `endpoint` with `nonce` and returns the raw document. */
export async function fetchAttestation(endpoint: string, nonce: Buffer, timeoutMs: number): Promise<Buffer> {
  const client = new APIClient(endpoint, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX_RESPONSE_BYTES,
  })
  try {
    return await new Promise<Buffer>((resolve, reject) =>
      client.getAttestation(
        { nonce },
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res.attestation)),
      ),
    )
  } finally {
    client.close()
  }
}

/**
 * Attests the node at `endpoint` with a fresh nonce. Refusals are recorded in `seen` before they are
 * thrown, so the caller can tell them from an unreachable node.
 */
export async function attestWithGetAttestation(
  endpoint: string,
  validator: Validator,
  timeoutMs: number,
  seen: AttestationSeen,
): Promise<{ variant: string }> {
  const nonce = randomBytes(MIN_NONCE_BYTES)
  const document = await fetchAttestation(endpoint, nonce, timeoutMs)
  const result = await validator.validate(document, nonce) // records its own refusal in seen
  try {
    if (!result.userData.equals(VERIFY_SERVICE_USER_DATA))
      throw new AttestationError(
        `the document's user data is not "${VERIFY_SERVICE_USER_DATA.toString()}": it was not issued by a verification service for this request`,
      )
    // tpm-ek counts only after a credential activation, which this RPC has no room for
    if (result.activation && !result.activation.proven)
      throw new AttestationError(
        `${validator.variant}: the node's attestation counts only after credential activation, which get-attestation cannot perform; use --protocol atls`,
      )
  } catch (err: unknown) {
    seen.refusal = err
    throw err
  }
  seen.verified = result
  return { variant: validator.variant }
}
