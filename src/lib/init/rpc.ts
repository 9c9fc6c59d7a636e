/** The Init call: retried only while nothing reached the node; once connected, one answer or one failure. */
import {
  connectivityState,
  InterceptingCall,
  status,
  type ChannelCredentials,
  type Interceptor,
} from '@grpc/grpc-js'
import { APIClient, type InitRequest, type InitResponse } from '../../gen/init.js'
import { isAttestationFailure } from '../atls/index.js'
import { retry, sleepMs, type Logger } from '../system/index.js'

export type InitOutcome =
  | { ok: true; kubeconfig: Buffer; clusterId: Buffer }
  | {
      ok: false
      error: string
      logs: Buffer
      logError?: string
      /** The call's final gRPC status code, when the node sent one. */
      code?: status
      /**
       * The connection broke after the request went out, with no answer from the node (no
       * init_failure, no status it sent): the node may still be initializing, and a resume can fetch
       * its answer.
       */
      dropped?: boolean
    }

export interface InitRpcOptions {
  address: string
  credentials: ChannelCredentials
  signal: AbortSignal
  /** Overall deadline for the call. */
  deadline: Date
  log: Logger
  retryInitialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  /**
   * Called when an attempt reached the node (TLS + attestation passed) and `sendAfter` is done:
   * the request is on its way.
   */
  onConnected?: () => void
  /**
   * The request waits for this as well as for the verified connection, which is made meanwhile
   * (init writes the master secret while the node attests). Nothing is sent if it rejects; the
   * caller then aborts `signal`.
   */
  sendAfter?: Promise<void>
  /**
   * Picks the request once the attempt's connection is verified (what the node's attestation
   * showed decides between a full request and a resume); `request` is sent when absent. The
   * message is held back until then.
   */
  pickRequest?: () => InitRequest
}

const RETRY_MAX_DELAY_MS = 5_000

/** A failure before the request reached the node, and not an attestation refusal: safe to try again. */
export class NotConnectedError extends Error {
  constructor(
    readonly code: number,
    details: string,
  ) {
    super(details)
    this.name = 'NotConnectedError'
  }
}

export async function callInit(request: InitRequest, opts: InitRpcOptions): Promise<InitOutcome> {
  // When the time is up between attempts, the last attempt's error says why (connection refused…).
  let lastError: unknown
  return retry(() => attempt(request, opts), {
    attempts: Number.POSITIVE_INFINITY,
    initialDelayMs: opts.retryInitialDelayMs ?? 500,
    maxDelayMs: RETRY_MAX_DELAY_MS,
    signal: opts.signal,
    sleep: opts.sleep ?? sleepMs,
    retryable: (err) =>
      err instanceof NotConnectedError && err.code === status.UNAVAILABLE && !isAttestationFailure(err),
    onRetry: (err, n, delayMs) => {
      lastError = err
      opts.log.info('Node not reachable yet, retrying', {
        attempt: n,
        delayMs,
        error: err instanceof Error ? err.message : String(err),
      })
    },
  }).catch((err: unknown) => {
    throw opts.signal.aborted && lastError !== undefined ? lastError : err
  })
}

/** One fresh channel per attempt, so grpc-js' own reconnect backoff does not stretch our retries. */
function attempt(request: InitRequest, opts: InitRpcOptions): Promise<InitOutcome> {
  const client = new APIClient(opts.address, opts.credentials, { 'grpc.enable_retries': 0 })
  let ready = () => {}
  const verified = new Promise<void>((resolve) => (ready = resolve))
  const connected = watchReady(client, ready)
  const released = opts.sendAfter ? Promise.all([verified, opts.sendAfter]).then(() => {}) : verified
  released.then(opts.onConnected, () => {}) // a rejected sendAfter sends nothing: the caller aborts
  const interceptors =
    opts.pickRequest || opts.sendAfter
      ? [sendOnceVerified(released, opts.pickRequest ?? (() => request))]
      : []
  return new Promise<InitOutcome>((resolve, reject) => {
    const call = client.init(request, { deadline: opts.deadline, interceptors })
    const abort = () => call.cancel()
    opts.signal.addEventListener('abort', abort, { once: true })
    let failure: { error: string } | undefined
    const logs: Buffer[] = []
    let settled = false
    const finish = (fn: () => void) => {
      if (settled) return
      settled = true
      opts.signal.removeEventListener('abort', abort)
      connected.stop()
      client.close()
      fn()
    }
    call.on('data', (msg: InitResponse) => {
      const kind = msg.kind
      if (kind?.$case === 'initSuccess' && !failure) {
        finish(() =>
          resolve({ ok: true, kubeconfig: kind.value.kubeconfig, clusterId: kind.value.clusterId }),
        )
        call.cancel()
      } else if (kind?.$case === 'initFailure') failure = { error: kind.value.error }
      else if (kind?.$case === 'log') logs.push(kind.value.log)
    })
    call.on('error', (err: Error & { code?: number; details?: string }) => {
      if (err.code === status.CANCELLED && !opts.signal.aborted) return // after success
      const sent =
        connected.ready ||
        client.getChannel().getConnectivityState(false) === connectivityState.READY ||
        failure !== undefined ||
        logs.length > 0
      if (failure)
        return finish(() =>
          resolve({ ok: false, error: failure?.error ?? '', logs: Buffer.concat(logs), code: err.code }),
        )
      if (!sent && !opts.signal.aborted)
        return finish(() =>
          reject(new NotConnectedError(err.code ?? status.UNKNOWN, err.details ?? err.message)),
        )
      finish(() =>
        sent
          ? resolve({
              ok: false,
              error: err.details ?? err.message,
              logs: Buffer.concat(logs),
              logError: err.message,
              code: err.code,
              dropped: !opts.signal.aborted && isConnectionLoss(err.code),
            })
          : reject(err),
      )
    })
    call.on('end', () =>
      finish(() =>
        resolve(
          failure
            ? { ok: false, error: failure.error, logs: Buffer.concat(logs) }
            : { ok: false, error: 'empty response from cluster', logs: Buffer.concat(logs) },
        ),
      ),
    )
  })
}

/**
 * What grpc-js reports for a connection that ended under a call: UNAVAILABLE ("Connection dropped",
 * ECONNRESET) or INTERNAL ("Received RST_STREAM with code 0 (Call ended without gRPC status)").
 * The node's own refusals come after an init_failure message and are never taken for these.
 */
function isConnectionLoss(code: number | undefined): boolean {
  return code === status.UNAVAILABLE || code === status.INTERNAL
}

/**
 * Holds the request message back until the connection is verified (and sendAfter done), then sends
 * what `pick` says (grpc-js lets a message requester call `next` later; the half-close waits for
 * it). A connection that never verifies fails the call, and the message is never sent.
 */
function sendOnceVerified(released: Promise<void>, pick: () => InitRequest): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      sendMessage: (_message, next) =>
        void released.then(
          () => next(pick()),
          () => {},
        ),
    })
}

/** Tracks whether the channel reached READY (handshake and attestation passed). */
function watchReady(client: APIClient, onConnected?: () => void): { readonly ready: boolean; stop(): void } {
  const channel = client.getChannel()
  const state = { ready: false, stopped: false }
  const watch = (current: connectivityState) => {
    if (current === connectivityState.READY) {
      state.ready = true
      onConnected?.()
      return
    }
    if (state.stopped || current === connectivityState.SHUTDOWN) return
    channel.watchConnectivityState(current, Infinity, () => watch(channel.getConnectivityState(false)))
  }
  watch(channel.getConnectivityState(false))
  return {
    get ready() {
      return state.ready
    },
    stop: () => void (state.stopped = true),
  }
}
