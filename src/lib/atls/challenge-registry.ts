/**
 * The join service's challenges: nonces it chose, each usable once within CHALLENGE_TTL_MS. The
 * challenge RPC needs no attestation, so issuing one must cost the server no memory that a flood
 * could exhaust: a nonce carries its own expiry and a MAC under a key only this registry holds, and
 * the server remembers a nonce only once it was spent (by an attested connection) or, for tpm-ek,
 * the activation it expects (bounded per peer address; refused beyond, never evicted).
 */
import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto'
import { AttestationError, type ActivationExpectation } from '../attestation/index.js'
import { NONCE_BYTES } from './nonce.js'

export const CHALLENGE_TTL_MS = 60_000

export interface ChallengeLimits {
  /** Open tpm-ek challenges (each holds the activation it expects) per peer address. */
  activationsPerPeer?: number
  /** Open tpm-ek challenges, all peers together. */
  activations?: number
  /** Spent nonces remembered until they expire; only attested connections spend one. */
  spent?: number
}

/** A node asks for one challenge per join attempt; 32 open per address leaves room for nodes behind one NAT. */
export const DEFAULT_CHALLENGE_LIMITS: Required<ChallengeLimits> = {
  activationsPerPeer: 32,
  activations: 10_000,
  spent: 100_000,
}

/** Too many open challenges: the caller should answer or abandon its own first (RESOURCE_EXHAUSTED). */
export class ChallengeLimitError extends Error {}

// nonce = expiry (ms since the epoch, 6 bytes) ‖ random (10 bytes) ‖ HMAC-SHA256(key, both)[0..16]
const EXPIRY_BYTES = 6
const TAG_AT = 16
const MAC_LABEL = 'constellation join challenge v1'

interface Activation {
  expires: number
  peer: string
  expected: ActivationExpectation
}

export class ChallengeRegistry {
  /** A KeyObject, not bytes: createHmac would import raw bytes again for every tag (twice per join). */
  private readonly key = createSecretKey(randomBytes(32))
  private readonly limits: Required<ChallengeLimits>
  /** Insertion order is expiry order (one TTL for all), so the expired are always at the front. */
  private readonly spent = new Map<string, number>()
  private readonly activations = new Map<string, Activation>()
  private readonly activationsByPeer = new Map<string, number>()

  constructor(
    private readonly now: () => number = Date.now,
    limits: ChallengeLimits = {},
  ) {
    this.limits = { ...DEFAULT_CHALLENGE_LIMITS, ...limits }
  }

  /** A fresh nonce; with `expected` (tpm-ek), remembered for `peer` until spent or expired. */
  issue(expected?: ActivationExpectation, peer = ''): Buffer {
    const expires = this.now() + CHALLENGE_TTL_MS
    const body = Buffer.alloc(TAG_AT)
    body.writeUIntBE(expires, 0, EXPIRY_BYTES)
    randomBytes(TAG_AT - EXPIRY_BYTES).copy(body, EXPIRY_BYTES)
    const nonce = Buffer.concat([body, this.tag(body)])
    if (expected) this.remember(nonce, { expires, peer, expected })
    return nonce
  }

  /**
   * What an authentic, unexpired, unspent nonce was issued with; undefined for any other. Opening
   * does not spend: the connection spends it once its attestation verified, so a failed attempt
   * cannot burn a genuine node's nonce.
   */
  open(nonce: Buffer): { expected?: ActivationExpectation } | undefined {
    if (
      nonce.length !== NONCE_BYTES ||
      !timingSafeEqual(nonce.subarray(TAG_AT), this.tag(nonce.subarray(0, TAG_AT)))
    )
      return undefined
    this.expire()
    const key = nonce.toString('hex')
    if (nonce.readUIntBE(0, EXPIRY_BYTES) < this.now() || this.spent.has(key)) return undefined
    return { expected: this.activations.get(key)?.expected }
  }

  /** Marks an opened nonce used; throws when it was used meanwhile (a replay racing the original). */
  spend(nonce: Buffer): void {
    const key = nonce.toString('hex')
    if (this.spent.has(key))
      throw new AttestationError(
        'client nonce was not issued by this server, expired, or already used (replay)',
      )
    this.expire()
    if (this.spent.size >= this.limits.spent)
      throw new AttestationError(
        'this join service cannot remember more used challenges right now; ask for a new challenge in a minute',
      )
    this.spent.set(key, nonce.readUIntBE(0, EXPIRY_BYTES))
    this.forget(key)
  }

  /** True exactly once per issued, unexpired nonce (open and spend in one step). */
  consume(nonce: Buffer): boolean {
    if (!this.open(nonce)) return false
    this.spend(nonce)
    return true
  }

  private tag(body: Buffer): Buffer {
    return createHmac('sha256', this.key)
      .update(MAC_LABEL)
      .update(body)
      .digest()
      .subarray(0, NONCE_BYTES - TAG_AT)
  }

  private remember(nonce: Buffer, activation: Activation): void {
    this.expire()
    const open = this.activationsByPeer.get(activation.peer) ?? 0
    if (open >= this.limits.activationsPerPeer)
      throw new ChallengeLimitError(
        `${activation.peer || 'this peer'} has ${open} open tpm-ek challenges, the most one address may hold; answer them or let them expire (${CHALLENGE_TTL_MS / 1000} s)`,
      )
    if (this.activations.size >= this.limits.activations)
      throw new ChallengeLimitError(
        `this join service holds ${this.activations.size} open tpm-ek challenges, the most it keeps; try again when they expire (${CHALLENGE_TTL_MS / 1000} s)`,
      )
    this.activations.set(nonce.toString('hex'), activation)
    this.activationsByPeer.set(activation.peer, open + 1)
  }

  private forget(key: string): void {
    const activation = this.activations.get(key)
    if (!activation) return
    this.activations.delete(key)
    const left = (this.activationsByPeer.get(activation.peer) ?? 1) - 1
    if (left > 0) this.activationsByPeer.set(activation.peer, left)
    else this.activationsByPeer.delete(activation.peer)
  }

  private expire(): void {
    const now = this.now()
    for (const [key, expires] of this.spent) {
      if (expires >= now) break
      this.spent.delete(key)
    }
    for (const [key, { expires }] of this.activations) {
      if (expires >= now) break
      this.forget(key)
    }
  }
}
