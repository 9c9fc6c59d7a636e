/** Server-chosen, single-use nonces for the join direction (an attested client proves freshness with one). */
import { randomBytes } from 'node:crypto'
import type { ServiceDefinition } from '@grpc/grpc-js'
import { NONCE_BYTES } from './nonce.js'

export const CHALLENGE_TTL_MS = 60_000
/** Bounds memory when clients ask for nonces and never use them. */
export const MAX_OUTSTANDING_CHALLENGES = 10_000
export const CHALLENGE_PATH = '/atls.Challenge/Issue'

export class ChallengeRegistry {
  private readonly outstanding = new Map<string, number>()

  constructor(private readonly now: () => number = Date.now) {}

  issue(): Buffer {
    this.expire()
    if (this.outstanding.size >= MAX_OUTSTANDING_CHALLENGES) {
      const oldest = this.outstanding.keys().next().value
      if (oldest !== undefined) this.outstanding.delete(oldest)
    }
    const nonce = randomBytes(NONCE_BYTES)
    this.outstanding.set(nonce.toString('hex'), this.now() + CHALLENGE_TTL_MS)
    return nonce
  }

  /** True exactly once per issued, unexpired nonce. */
  consume(nonce: Buffer): boolean {
    const key = nonce.toString('hex')
    const expires = this.outstanding.get(key)
    this.outstanding.delete(key)
    return expires !== undefined && expires >= this.now()
  }

  private expire(): void {
    const now = this.now()
    for (const [key, expires] of this.outstanding) if (expires < now) this.outstanding.delete(key)
  }
}

const raw = (b: Buffer) => b
/** The one RPC a client may call without attestation: it returns a fresh nonce (raw 32 bytes). */
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
