/** One JSON line per join-service request: who asked, from where, and what they got. Never a secret. */
import type { NodeRole } from '../nodeconfig/index.js'
import type { Logger } from '../system/index.js'

export type Verdict = 'ok' | 'refused' | 'error'

export interface AuditRecord {
  /**
   * The method: IssueJoinTicket, IssueRejoinTicket (or whatever an unattested caller tried), or
   * Challenge when a tpm-ek node's activation request was refused (its EK chain or its AK).
   */
  rpc: string
  /** The node name the request claimed; empty when it named none (or attestation refused it first). */
  node: string
  role: NodeRole | 'unknown'
  /** HOST:PORT the request came from. */
  peer: string
  /** A key ID, not a key: which disk a (re)join ticket was for. */
  diskUuid?: string
  verdict: Verdict
  /** Why it was refused or failed; absent when ok. */
  reason?: string
}

export type AuditLog = (record: AuditRecord) => void

/** Audit lines go through the daemon's JSON logger under component `…audit`, at info for every verdict. */
export function createAuditLog(logger: Logger): AuditLog {
  const audit = logger.child('audit')
  return (record) => audit.info('Join request', { ...record })
}
