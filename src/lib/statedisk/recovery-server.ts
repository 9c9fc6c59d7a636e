/**
 * The recovery endpoint of a rebooted node that waits for its state-disk key (Constellation's
 * disk-mapper recovery server, `recoverproto.API/Recover` on port 9999). The node's certificate
 * carries its attestation, so the operator's `constellation recover` checks the node before it
 * sends the master secret. The node tries the secret on its disk; a wrong one is refused and the
 * disk stays closed. The caller is not authenticated (the node attests to it, not the reverse), so
 * what anyone can make the node try is bounded (RecoveryAdmission), a request whose caller hung up
 * is never tried, and nothing secret or identifying (the disk UUID) goes back to a caller.
 */
import * as grpc from '@grpc/grpc-js'
import { APIService, type RecoverMessage, type RecoverResponse } from '../../gen/recover.js'
import { chainMessage } from '../errors/index.js'
import {
  boundedServerOptions,
  listenBounded,
  shutdownGracefully,
  type BoundedListener,
  type ConnectionLimits,
} from '../grpc/index.js'
import { NO_STORE_URI, parseClusterKmsUri } from '../kms/index.js'
import { peerAddress } from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { RecoveryAdmission, type RecoveryLimits, type RefusalReason } from './recovery-admission.js'
import { RecoveryRefusedError } from './recovery-refused.js'

/** A KMS URI and a storage URI: a few hundred bytes. */
const MAX_RECOVER_REQUEST_BYTES = 4 * 1024
const STOP_GRACE_MS = 5_000

export interface RecoveryServerOptions {
  /** HOST:PORT (the node config's recoveryServer.listen); port 0 picks a free one. */
  listen: string
  /** Server-attested aTLS in production (createAttestedServerCredentials with the node's issuer). */
  credentials: grpc.ServerCredentials
  /** Tries the master secret on the disk: RecoveryRefusedError when it does not open it. */
  recover: (master: { key: Buffer; salt: Buffer }) => Promise<void>
  log: Logger
  /** Connections per peer address and in all; the defaults fit any genuine operator. */
  connections?: ConnectionLimits
  /** The queue of master secrets to try and the backoff per address; the defaults fit any genuine operator. */
  requests?: RecoveryLimits
}

/** Sent for every wrong secret: the node's own log names the disk, the caller learns nothing of it. */
const REFUSED = "the master secret does not open this node's state disk; the disk stays closed"

/** Why a request was not queued (RESOURCE_EXHAUSTED, with when to ask again). */
const NOT_QUEUED: Record<RefusalReason, string> = {
  busy: 'the node is trying other master secrets, as many as it queues',
  peer: 'a master secret from this address is waiting already',
  backoff: 'too many wrong master secrets from this address',
}

interface Waiting {
  call: grpc.ServerUnaryCall<RecoverMessage, RecoverResponse>
  reply: grpc.sendUnaryData<RecoverResponse>
  /** The grpc-js peer (address and port), for the log. */
  caller: string
  /** The address, as the limits count. */
  peer: string
  master: { key: Buffer; salt: Buffer }
}

export class RecoveryServer {
  private readonly server: grpc.Server
  private readonly log: Logger
  private readonly admission: RecoveryAdmission
  /** One master secret at a time: the disk is tried once per request, in order. A request is
   *  waiting exactly while it is in here (`work` takes it out right before its try). */
  private readonly queue: Waiting[] = []
  private trying = false
  private done = false
  /** Requests answered without a try, per reason: logged at the 1st, 2nd, 4th, … of each. */
  private readonly untried = new Map<string, number>()
  private listener?: BoundedListener
  private stopping?: Promise<void>

  constructor(private readonly opts: RecoveryServerOptions) {
    this.log = opts.log.child('recovery')
    this.admission = new RecoveryAdmission(opts.requests)
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_RECOVER_REQUEST_BYTES,
      ...boundedServerOptions(opts.connections),
    })
    this.server.addService(APIService, { recover: this.handle })
  }

  /** Listens; resolves with the bound HOST:PORT. */
  async start(): Promise<string> {
    this.listener = await listenBounded(
      this.server,
      this.opts.listen,
      this.opts.credentials,
      'recoveryServer.listen',
      { limits: this.opts.connections, log: this.log },
    )
    const { address } = this.listener
    this.log.info('Serving recovery: `constellation recover` can send the master secret here', { address })
    return address
  }

  /** Lets a request in flight answer, then stops; idempotent. */
  stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      this.listener?.close()
      await shutdownGracefully(this.server, graceMs)
      this.listener?.destroy()
    })()
    return this.stopping
  }

  private readonly handle: grpc.handleUnaryCall<RecoverMessage, RecoverResponse> = (call, reply) => {
    const caller = call.getPeer()
    const refuse = (code: grpc.status, details: string) => {
      this.logUntried('refused', details, caller)
      reply({ code, details })
    }
    let master: { key: Buffer; salt: Buffer }
    try {
      master = parseClusterKmsUri(call.request.kmsUri)
    } catch {
      return refuse(grpc.status.INVALID_ARGUMENT, 'kms_uri: not a kms://cluster-kms URI with a key and salt')
    }
    const storage = call.request.storageUri
    if (storage !== '' && storage !== NO_STORE_URI)
      return refuse(grpc.status.INVALID_ARGUMENT, `storage_uri: only ${NO_STORE_URI} is supported`)
    if (this.done) return refuse(grpc.status.FAILED_PRECONDITION, 'this node recovered already')
    const peer = peerAddress(caller)
    const verdict = this.admission.admit(peer)
    if (!verdict.admitted) {
      const seconds = Math.ceil(verdict.retryAfterMs / 100) / 10
      this.logUntried('refused', NOT_QUEUED[verdict.reason], caller)
      const metadata = new grpc.Metadata()
      metadata.set('grpc-retry-pushback-ms', String(verdict.retryAfterMs))
      const details = `${NOT_QUEUED[verdict.reason]}; retry in ${seconds} s`
      return reply({ code: grpc.status.RESOURCE_EXHAUSTED, details, metadata })
    }
    const waiting: Waiting = { call, reply, caller, peer, master }
    this.queue.push(waiting)
    call.once('cancelled', () => this.hungUp(waiting))
    void this.work()
  }

  private async work(): Promise<void> {
    if (this.trying) return
    this.trying = true
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) await this.tryOne(next)
    } finally {
      this.trying = false
    }
  }

  private async tryOne(waiting: Waiting): Promise<void> {
    // A caller that hung up has given up: trying its secret could recover the node while the
    // operator's CLI reports a failure, so it is dropped right before the try.
    if (waiting.call.cancelled) return this.drop(waiting)
    const { caller, reply } = waiting
    const refuse = (verdict: 'refused' | 'error', code: grpc.status, details: string, reason: string) => {
      this.log.info('Recovery request', { peer: caller, verdict, reason })
      reply({ code, details })
    }
    let wrongSecret = false
    try {
      if (this.done) {
        const details = 'this node recovered already'
        return refuse('refused', grpc.status.FAILED_PRECONDITION, details, details)
      }
      await this.opts.recover(waiting.master)
      this.done = true
      if (waiting.call.cancelled)
        this.log.warn(
          'Recovered, but the caller hung up during the try: its `recover` may report a failure; run it again and it answers that this node recovered already',
          { peer: caller },
        )
      this.log.info('Recovery request', { peer: caller, verdict: 'recovered' })
      reply(null, {})
    } catch (err) {
      if (err instanceof RecoveryRefusedError) {
        wrongSecret = true
        return refuse('refused', grpc.status.PERMISSION_DENIED, REFUSED, err.message)
      }
      this.log.error('Recovery failed', { error: chainMessage(err) })
      const details = "recovery failed on the node; the node's log says why"
      refuse('error', grpc.status.INTERNAL, details, details)
    } finally {
      if (wrongSecret) this.admission.leaveWrongSecret(waiting.peer)
      else this.admission.leave(waiting.peer)
    }
  }

  /** The caller hung up: a request still waiting leaves the queue untried; one being tried is answered. */
  private hungUp(waiting: Waiting): void {
    const at = this.queue.indexOf(waiting)
    if (at < 0) return
    this.queue.splice(at, 1)
    this.drop(waiting)
  }

  /** The caller hung up before its secret was tried: its place is freed, untried. */
  private drop(waiting: Waiting): void {
    this.admission.leave(waiting.peer)
    this.logUntried('dropped', 'the caller hung up before its master secret was tried', waiting.caller)
  }

  /** Requests answered without a try cost a few log lines in a flood, not one each: `count` says how many. */
  private logUntried(verdict: 'refused' | 'dropped', reason: string, peer: string): void {
    const count = (this.untried.get(reason) ?? 0) + 1
    this.untried.set(reason, count)
    if ((count & (count - 1)) === 0) this.log.info('Recovery request', { peer, verdict, reason, count })
  }
}
