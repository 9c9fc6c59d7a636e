/** Node side: serves this node's attestation over aTLS on the verification service port. */
import * as grpc from '@grpc/grpc-js'
import type { Issuer } from '../attestation/index.js'
import { createAttestedServerCredentials } from '../atls/index.js'
import {
  boundedServerOptions,
  listenBounded,
  shutdownGracefully,
  type BoundedListener,
  type ConnectionLimits,
} from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { VerifyService, type DescribeResponse } from './service-definition.js'

export const DEFAULT_STOP_GRACE_MS = 10_000

/** What one connection may cost the service; the defaults fit any genuine client. */
export interface VerifyServiceBounds {
  limits?: ConnectionLimits
  handshakeTimeoutMs?: number
}

export class VerifyServiceDaemon {
  private readonly server: grpc.Server
  private listener?: BoundedListener
  private stopping?: Promise<void>
  private resolveDone!: () => void
  /** Resolves once the daemon has stopped. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve))

  constructor(
    private readonly listen: string,
    private readonly issuer: Issuer,
    private readonly log: Logger,
    /** Throws when the TPM cannot answer: a service that listens but can never attest misleads. */
    private readonly checkTpm: () => Promise<void> = async () => {},
    private readonly bounds: VerifyServiceBounds = {},
  ) {
    this.server = new grpc.Server(boundedServerOptions(bounds.limits))
    this.server.addService(VerifyService, {
      describe: (
        _call: grpc.ServerUnaryCall<unknown, DescribeResponse>,
        cb: grpc.sendUnaryData<DescribeResponse>,
      ) => {
        cb(null, { variant: issuer.variant })
      },
    })
  }

  /** Binds and serves; resolves with the bound address (port 0 picks a free one). */
  async start(): Promise<string> {
    await this.checkTpm()
    const creds = createAttestedServerCredentials({
      issuer: this.issuer,
      log: this.log,
      handshakeTimeoutMs: this.bounds.handshakeTimeoutMs,
    })
    this.listener = await listenBounded(this.server, this.listen, creds, 'verifyService.listen', {
      limits: this.bounds.limits,
      log: this.log,
    })
    const { address } = this.listener
    this.log.info('Verification service listening', { address, variant: this.issuer.variant })
    return address
  }

  /** Lets handshakes in flight finish, force-stops after graceMs; safe to call more than once. */
  stop(graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      this.listener?.close()
      await shutdownGracefully(this.server, graceMs)
      this.listener?.destroy()
      this.log.info('Verification service stopped')
      this.resolveDone()
    })()
    return this.stopping
  }
}
