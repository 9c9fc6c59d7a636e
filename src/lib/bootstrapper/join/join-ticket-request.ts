/**
 * One IssueJoinTicket (or IssueRejoinTicket) call over the join-direction aTLS: on one connection,
 * take the join service's single-use challenge, attest with a document bound to it and to the
 * connection, ask once, close. The join service is
 * not attested in this direction (as in Constellation): the ticket's secrets are only worth anything
 * to a node whose own attestation the service accepted.
 */
import * as grpc from '@grpc/grpc-js'
import {
  APIClient,
  type IssueJoinTicketRequest,
  type IssueJoinTicketResponse,
  type IssueRejoinTicketRequest,
  type IssueRejoinTicketResponse,
} from '../../../gen/join.js'
import type { Issuer } from '../../attestation/index.js'
import { clientOn, isAttestationFailure, openAttestedClientChannel } from '../../atls/index.js'
import { chainMessage } from '../../errors/index.js'
import { withoutRpcInternals } from '../../grpc/index.js'
import type { Logger } from '../../system/index.js'

/** Constellation's JoinClient gives each call 30 s. */
export const JOIN_TICKET_TIMEOUT_MS = 30_000

/** Asks the join service at HOST:PORT for a ticket; rejects with the gRPC error, or the signal's reason. */
export type JoinTicketRequester = (
  endpoint: string,
  request: IssueJoinTicketRequest,
  signal: AbortSignal,
) => Promise<IssueJoinTicketResponse>

/** `localAddress`: the address the node's requests leave from, which the join service knows it by. */
export function attestedJoinTicketRequester(
  issuer: Issuer,
  timeoutMs = JOIN_TICKET_TIMEOUT_MS,
  localAddress?: string,
): JoinTicketRequester {
  return (endpoint, request, signal) =>
    attestedCall({ issuer, timeoutMs, localAddress }, endpoint, signal, (client, options, done) =>
      client.issueJoinTicket(request, new grpc.Metadata(), options, done),
    )
}

/** Asks the join service at HOST:PORT for a rebooted node's disk key and measurement secret. */
export type RejoinTicketRequester = (
  endpoint: string,
  request: IssueRejoinTicketRequest,
  signal: AbortSignal,
) => Promise<IssueRejoinTicketResponse>

/** IssueRejoinTicket over the same join-direction aTLS: the node attests itself as on its first boot. */
export function attestedRejoinTicketRequester(
  issuer: Issuer,
  timeoutMs = JOIN_TICKET_TIMEOUT_MS,
  localAddress?: string,
): RejoinTicketRequester {
  return (endpoint, request, signal) =>
    attestedCall({ issuer, timeoutMs, localAddress }, endpoint, signal, (client, options, done) =>
      client.issueRejoinTicket(request, new grpc.Metadata(), options, done),
    )
}

/** One unary call on a fresh attested channel: a fresh challenge per call, as the server consumes the nonce. */
async function attestedCall<Res>(
  { issuer, timeoutMs, localAddress }: { issuer: Issuer; timeoutMs: number; localAddress?: string },
  endpoint: string,
  signal: AbortSignal,
  invoke: (
    client: APIClient,
    options: grpc.CallOptions,
    done: (err: grpc.ServiceError | null, response: Res) => void,
  ) => grpc.ClientUnaryCall,
): Promise<Res> {
  signal.throwIfAborted()
  const opening = openAttestedClientChannel(endpoint, issuer, { deadlineMs: timeoutMs, localAddress })
  // a channel that opens after the abort gave up on it is closed as soon as it exists
  opening.then(
    (late) => signal.aborted && late.close(),
    () => {},
  )
  const channel = await untilAborted(opening, signal)
  const client = clientOn(channel, APIClient)
  try {
    return await new Promise<Res>((resolve, reject) => {
      const cancel = () => call.cancel()
      const call = invoke(client, { deadline: Date.now() + timeoutMs }, (err, response) => {
        signal.removeEventListener('abort', cancel)
        if (signal.aborted) reject(signal.reason)
        else if (err) reject(err)
        else resolve(response)
      })
      signal.addEventListener('abort', cancel, { once: true })
    })
  } finally {
    channel.close()
  }
}

/** The work's result, or the signal's reason as soon as it aborts (the work is left to time out). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  // work that outlives the abort still settles: its failure then concerns nobody, and must not
  // surface as an unhandled rejection that ends the daemon
  work.catch(() => {})
  signal.throwIfAborted()
  let onAbort = () => {}
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort))
}

/** Why one join service gave this node nothing, in the service's own words without gRPC's wrapping. */
function refusalReason(err: unknown): string {
  const details = typeof err === 'object' && err !== null ? (err as { details?: unknown }).details : undefined
  return withoutRpcInternals(typeof details === 'string' && details ? details : chainMessage(err))
}

/**
 * Logs why one join service gave this node nothing: a refused attestation as such (the operator
 * may update the measurements), anything else under `otherwise`. Returns the reason, for the
 * round's summary.
 */
export function logJoinServiceRefusal(
  log: Logger,
  endpoint: string,
  err: unknown,
  otherwise: string,
): string {
  const reason = refusalReason(err)
  if (isAttestationFailure(err))
    log.warn("The join service refused this node's attestation", { endpoint, reason })
  else log.warn(otherwise, { endpoint, reason })
  return reason
}

/**
 * The host answered and nothing listens on the port: a join service that does not run yet (every
 * node until the cluster is initialized; a control plane that is rebooting). Asking again costs
 * the host one refused connection, so the rounds keep their first pace rather than backing off,
 * and the node gets its answer within a quarter second or so of the service starting.
 */
export const isRefusedConnection = (err: unknown): boolean => /\bECONNREFUSED\b/.test(refusalReason(err))

/**
 * The log of rounds over the join services: each failure as logJoinServiceRefusal says it, but a
 * stretch of rounds in which no join service listened is said once, not every second.
 */
export class JoinRoundsLog {
  private saidNothingListens = false

  constructor(
    private readonly log: Logger,
    private readonly otherwise: string,
  ) {}

  /** One endpoint's failure; returns the reason, for the round's summary. */
  failure(endpoint: string, err: unknown): string {
    if (this.saidNothingListens && isRefusedConnection(err)) return refusalReason(err)
    return logJoinServiceRefusal(this.log, endpoint, err, this.otherwise)
  }

  /** A round that ended without an answer; `again` is the caller's own line for any other round. */
  roundFailed(nothingListened: boolean, attempt: number, again: () => void): void {
    if (!nothingListened) {
      this.saidNothingListens = false
      return again()
    }
    if (this.saidNothingListens) return
    this.saidNothingListens = true
    this.log.info('No join service listens yet; asking again several times a second until one does', {
      attempt,
    })
  }
}
