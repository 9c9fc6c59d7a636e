/**
 * One IssueJoinTicket call over the join-direction aTLS: fetch the join service's single-use
 * challenge, present a certificate whose attestation binds it, ask once, close. The join service is
 * not attested in this direction (as in Constellation): the ticket's secrets are only worth anything
 * to a node whose own attestation the service accepted.
 */
import * as grpc from '@grpc/grpc-js'
import { APIClient, type IssueJoinTicketRequest, type IssueJoinTicketResponse } from '../../gen/join.js'
import type { Issuer } from '../attestation/index.js'
import { createAttestedClientChannelCredentials } from '../atls/index.js'

/** Constellation's JoinClient gives each call 30 s. */
export const JOIN_TICKET_TIMEOUT_MS = 30_000
/** A fixed name: the server is not attested here, and the node's view of its address is not a name. */
const SERVER_NAME_OVERRIDE = 'constellation'

/** Asks the join service at HOST:PORT for a ticket; rejects with the gRPC error, or the signal's reason. */
export type JoinTicketRequester = (
  endpoint: string,
  request: IssueJoinTicketRequest,
  signal: AbortSignal,
) => Promise<IssueJoinTicketResponse>

export function attestedJoinTicketRequester(
  issuer: Issuer,
  timeoutMs = JOIN_TICKET_TIMEOUT_MS,
): JoinTicketRequester {
  return async (endpoint, request, signal) => {
    // a fresh challenge and certificate per call: the server consumes the nonce
    signal.throwIfAborted()
    const credentials = await untilAborted(
      createAttestedClientChannelCredentials(endpoint, issuer, timeoutMs),
      signal,
    )
    const client = new APIClient(endpoint, credentials, {
      'grpc.ssl_target_name_override': SERVER_NAME_OVERRIDE,
      'grpc.enable_retries': 0,
    })
    try {
      return await new Promise<IssueJoinTicketResponse>((resolve, reject) => {
        const cancel = () => call.cancel()
        const call = client.issueJoinTicket(
          request,
          new grpc.Metadata(),
          { deadline: Date.now() + timeoutMs },
          (err, response) => {
            signal.removeEventListener('abort', cancel)
            if (signal.aborted) reject(signal.reason)
            else if (err) reject(err)
            else resolve(response)
          },
        )
        signal.addEventListener('abort', cancel, { once: true })
      })
    } finally {
      client.close()
    }
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
