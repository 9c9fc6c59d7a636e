/** How a join-service request fails: the request's fault (sent back as is), or a dependency's (logged). */

export type RefusalStatus = 'invalid-argument' | 'permission-denied'

/** The request itself is at fault; the message names the field and is safe to send back. */
export class JoinRefusedError extends Error {
  constructor(
    readonly status: RefusalStatus,
    message: string,
    /** The node it concerns (the metadata's name for the peer), for the audit line; empty if unknown. */
    readonly node = '',
  ) {
    super(message)
    this.name = 'JoinRefusedError'
  }
}

/** A dependency failed. The message names only the step; the cause is for the server's log. */
export class TicketStepError extends Error {
  constructor(
    readonly step: string,
    cause: unknown,
  ) {
    super(`${step} failed`, { cause })
    this.name = 'TicketStepError'
  }
}
