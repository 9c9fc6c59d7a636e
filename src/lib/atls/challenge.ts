/** Server-chosen, single-use nonces for the join direction (an attested client proves freshness with one). */
import { randomBytes } from 'node:crypto'
import type { ServiceDefinition } from '@grpc/grpc-js'
import { AttestationError, type ActivationExpectation } from '../attestation/index.js'
import type { MadeCredential } from '../tpm/index.js'
import { NONCE_BYTES } from './nonce.js'

export const CHALLENGE_TTL_MS = 60_000
/** Bounds memory when clients ask for nonces and never use them. */
export const MAX_OUTSTANDING_CHALLENGES = 10_000
export const CHALLENGE_PATH = '/atls.Challenge/Issue'

interface Outstanding {
  expires: number
  /** The activation challenge sent with this nonce (tpm-ek), which the client's document must meet. */
  expected?: ActivationExpectation
}

export class ChallengeRegistry {
  private readonly outstanding = new Map<string, Outstanding>()

  constructor(private readonly now: () => number = Date.now) {}

  issue(expected?: ActivationExpectation): Buffer {
    this.expire()
    if (this.outstanding.size >= MAX_OUTSTANDING_CHALLENGES) {
      const oldest = this.outstanding.keys().next().value
      if (oldest !== undefined) this.outstanding.delete(oldest)
    }
    const nonce = randomBytes(NONCE_BYTES)
    this.outstanding.set(nonce.toString('hex'), { expires: this.now() + CHALLENGE_TTL_MS, expected })
    return nonce
  }

  /** Exactly once per issued, unexpired nonce: what was issued with it; undefined otherwise. */
  take(nonce: Buffer): { expected?: ActivationExpectation } | undefined {
    const key = nonce.toString('hex')
    const entry = this.outstanding.get(key)
    this.outstanding.delete(key)
    return entry !== undefined && entry.expires >= this.now() ? { expected: entry.expected } : undefined
  }

  /** True exactly once per issued, unexpired nonce. */
  consume(nonce: Buffer): boolean {
    return this.take(nonce) !== undefined
  }

  private expire(): void {
    const now = this.now()
    for (const [key, { expires }] of this.outstanding) if (expires < now) this.outstanding.delete(key)
  }
}

const raw = (b: Buffer) => b
/**
 * The one RPC a client may call without attestation. An empty request gets a fresh nonce (raw 32
 * bytes). A tpm-ek client sends its activation request (EK certificates, AK public area) and gets
 * the nonce followed by a credential for that AK (encodeCredential), to activate before it attests.
 */
export const ChallengeService: ServiceDefinition = {
  issue: {
    path: CHALLENGE_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
}

/** TPM2B(credentialBlob) || TPM2B(encryptedSecret): the credential after the nonce in a challenge answer. */
export function encodeCredential(made: MadeCredential): Buffer {
  const sized = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b])
  return Buffer.concat([sized(made.credentialBlob), sized(made.encryptedSecret)])
}

export function decodeCredential(bytes: Buffer): MadeCredential {
  const take = (at: number, what: string): [Buffer, number] => {
    if (bytes.length < at + 2) throw new AttestationError(`challenge answer: ${what} is cut short`)
    const length = bytes.readUInt16BE(at)
    if (bytes.length < at + 2 + length) throw new AttestationError(`challenge answer: ${what} is cut short`)
    return [bytes.subarray(at + 2, at + 2 + length), at + 2 + length]
  }
  const [credentialBlob, next] = take(0, 'credentialBlob')
  const [encryptedSecret, end] = take(next, 'encryptedSecret')
  if (end !== bytes.length) throw new AttestationError('challenge answer: bytes after the credential')
  return { credentialBlob: Buffer.from(credentialBlob), encryptedSecret: Buffer.from(encryptedSecret) }
}
