/** Marks the node as bootstrapped exactly once: unlocked → locked, and there is deliberately no unlock. */
import { createHash } from 'node:crypto'
import { CLUSTER_ID_PCR } from '../attestation/index.js'

// PCR 15 carries the cluster ID; a non-zero value means the node was bootstrapped before.
export { CLUSTER_ID_PCR }

/** The TPM operation the lock needs. */
export interface PcrExtender {
  /** Extends the SHA-256 bank of `index` with a 32-byte digest. */
  extendPcr(index: number, digest: Buffer): Promise<void>
}

/** PCR 15 = SHA256(0^32 ‖ SHA256(clusterId)) on a node fresh from boot: at init or join, and again after each reboot. */
export async function extendClusterIdPcr(tpm: PcrExtender, clusterId: Buffer): Promise<void> {
  await tpm.extendPcr(CLUSTER_ID_PCR, createHash('sha256').update(clusterId).digest())
}

export class NodeLockedError extends Error {
  constructor() {
    super('node is already being activated')
    this.name = 'NodeLockedError'
  }
}

export class NodeLock {
  private locked = false

  constructor(private readonly tpm: PcrExtender) {}

  /**
   * Takes the lock for `clusterId` and extends PCR 15 with SHA256(clusterId), so that
   * PCR 15 = SHA256(0^32 ‖ SHA256(clusterId)). Returns false when someone else holds it.
   * The flag flips before the TPM call so two callers can never both proceed.
   */
  async tryLockOnce(clusterId: Buffer): Promise<boolean> {
    if (this.locked) return false
    this.locked = true
    await extendClusterIdPcr(this.tpm, clusterId)
    return true
  }

  get isLocked(): boolean {
    return this.locked
  }
}
