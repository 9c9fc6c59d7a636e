/**
 * The certificate keys this node's init server attested lately. A resume proof names the key of the
 * handshake it was made for (the attestation's userData, SHA-256 of the certificate key); the node
 * accepts it only for a key it attested itself, once. A proof the operator's CLI made for a server
 * that posed as this node names that server's key, which this node never attested: relaying it
 * gets nothing.
 */
import type { Issuer } from '../../attestation/index.js'

/**
 * A genuine CLI sends its request right after its handshake, so a minute is ample; the cap bounds
 * memory. Every entry costs a caller a TPM quote (a few ms, one at a time), so a flood needs far
 * longer than a genuine request to push a key out.
 */
export const ATTESTED_KEY_TTL_MS = 60_000
export const MAX_ATTESTED_KEYS = 4_096

export class AttestedKeys {
  /** Hex key → when it was attested (ms); oldest first. */
  private readonly keys = new Map<string, number>()

  constructor(
    private readonly now: () => number = Date.now,
    private readonly limits = { ttlMs: ATTESTED_KEY_TTL_MS, max: MAX_ATTESTED_KEYS },
  ) {}

  record(key: Buffer): void {
    const hex = key.toString('hex')
    this.keys.delete(hex)
    this.keys.set(hex, this.now())
    this.forgetOld()
  }

  /** True once for a key attested within the TTL; it is forgotten then, so a proof works once. */
  take(key: Buffer): boolean {
    this.forgetOld()
    return this.keys.delete(key.toString('hex'))
  }

  get size(): number {
    return this.keys.size
  }

  private forgetOld(): void {
    const oldest = this.now() - this.limits.ttlMs
    for (const [hex, at] of this.keys) {
      if (at >= oldest && this.keys.size <= this.limits.max) break
      this.keys.delete(hex)
    }
  }
}

/** The issuer the init server's credentials use, noting each key it attests. */
export function recordingIssuer(issuer: Issuer, keys: AttestedKeys): Issuer {
  const activate = issuer.activate?.bind(issuer)
  const activationRequest = issuer.activationRequest?.bind(issuer)
  return {
    variant: issuer.variant,
    oid: issuer.oid,
    issue: async (userData, nonce, activationProof) => {
      const document = await issuer.issue(userData, nonce, activationProof)
      keys.record(userData)
      return document
    },
    ...(activate ? { activate } : {}),
    ...(activationRequest ? { activationRequest } : {}),
  }
}
