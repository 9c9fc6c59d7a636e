/** Node side: serves this node's attestation over aTLS on the verification service port. */
import * as grpc from '@grpc/grpc-js'
import type { Issuer } from '../attestation/index.js'
import { createAttestedServerCredentials } from '../atls/index.js'
import { listenOn, shutdownGracefully } from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { VerifyService, type DescribeResponse } from './service-definition.js'

export const DEFAULT_STOP_GRACE_MS = 10_000

export class VerifyServiceDaemon {
  private readonly server = new grpc.Server()
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
  ) {
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
    const creds = createAttestedServerCredentials({ issuer: this.issuer, log: this.log })
    const address = await listenOn(this.server, this.listen, creds, 'verifyService.listen')
    this.log.info('Verification service listening', { address, variant: this.issuer.variant })
    return address
  }

  /** Lets handshakes in flight finish, force-stops after graceMs; safe to call more than once. */
  stop(graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      await shutdownGracefully(this.server, graceMs)
      this.log.info('Verification service stopped')
      this.resolveDone()
    })()
    return this.stopping
  }
}
