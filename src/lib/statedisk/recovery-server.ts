/**
 * The recovery endpoint of a rebooted node that waits for its state-disk key (Constellation's
 * disk-mapper recovery server, `recoverproto.API/Recover` on port 9999). The node's certificate
 * carries its attestation, so the operator's `constellation recover` checks the node before it
 * sends the master secret. The node tries the secret on its disk; a wrong one is refused and the
 * disk stays closed. Nothing secret reaches a log line or an error sent back.
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
import type { Logger } from '../system/index.js'
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
  limits?: ConnectionLimits
}

export class RecoveryServer {
  private readonly server: grpc.Server
  private readonly log: Logger
  /** One master secret at a time: the disk is tried once per request, in order. */
  private queue: Promise<unknown> = Promise.resolve()
  private done = false
  private listener?: BoundedListener
  private stopping?: Promise<void>

  constructor(private readonly opts: RecoveryServerOptions) {
    this.log = opts.log.child('recovery')
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_RECOVER_REQUEST_BYTES,
      ...boundedServerOptions(opts.limits),
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
      { limits: this.opts.limits, log: this.log },
    )
    const { address } = this.listener
    this.log.info('Serving recovery: `constellation recover` can send the master secret here', { address })
    return address
  }

  /** Lets a request in flight answer, then stops; idempotent. */
  stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.listener?.close()
    this.stopping ??= shutdownGracefully(this.server, graceMs)
    return this.stopping
  }

  private readonly handle: grpc.handleUnaryCall<RecoverMessage, RecoverResponse> = (call, reply) => {
    const peer = call.getPeer()
    const answer = (verdict: string, status?: Partial<grpc.StatusObject>, reason?: string) => {
      this.log.info('Recovery request', { peer, verdict, ...(reason ? { reason } : {}) })
      if (status) reply(status)
      else reply(null, {})
    }
    let master: { key: Buffer; salt: Buffer }
    try {
      master = parseClusterKmsUri(call.request.kmsUri)
    } catch {
      const details = 'kms_uri: not a kms://cluster-kms URI with a key and salt'
      return answer('refused', { code: grpc.status.INVALID_ARGUMENT, details }, details)
    }
    const storage = call.request.storageUri
    if (storage !== '' && storage !== NO_STORE_URI) {
      const details = `storage_uri: only ${NO_STORE_URI} is supported`
      return answer('refused', { code: grpc.status.INVALID_ARGUMENT, details }, details)
    }
    this.queue = this.queue.then(async () => {
      if (this.done) {
        const details = 'this node recovered already'
        return answer('refused', { code: grpc.status.FAILED_PRECONDITION, details }, details)
      }
      try {
        await this.opts.recover(master)
        this.done = true
        answer('recovered')
      } catch (err) {
        if (err instanceof RecoveryRefusedError)
          return answer('refused', { code: grpc.status.PERMISSION_DENIED, details: err.message }, err.message)
        this.log.error('Recovery failed', { error: chainMessage(err) })
        const details = "recovery failed on the node; the node's log says why"
        answer('error', { code: grpc.status.INTERNAL, details }, details)
      }
    })
  }
}
