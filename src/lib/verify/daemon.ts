/**
 * Node side: serves this node's attestation on the verification service port, over aTLS (our CLI)
 * and as Constellation's plain-gRPC verify.API/GetAttestation (its CLI, any gRPC client).
 */
import * as grpc from '@grpc/grpc-js'
import type { Issuer } from '../attestation/index.js'
import { createAttestedServerCredentials } from '../atls/index.js'
import {
  boundedServerOptions,
  shutdownGracefully,
  type BoundedListener,
  type ConnectionLimits,
  type CredentialsWithServices,
} from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { serveHttpGet } from './get-attestation-http.js'
import {
  AttestationDesk,
  createGetAttestationServer,
  type GetAttestationLimits,
} from './get-attestation-server.js'
import { listenForBothProtocols } from './protocol-listener.js'
import { VerifyService, type DescribeResponse } from './service-definition.js'

export const DEFAULT_STOP_GRACE_MS = 10_000
/** A peer must start its TLS handshake or HTTP/2 preface within this, as a handshake must finish. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 10_000

/** What one connection may cost the service; the defaults fit any genuine client. */
export interface VerifyServiceBounds {
  limits?: ConnectionLimits
  handshakeTimeoutMs?: number
  /** Quotes GetAttestation callers may have in flight. */
  getAttestation?: GetAttestationLimits
}

export class VerifyServiceDaemon {
  private readonly server: grpc.Server
  private readonly plain: grpc.Server
  private readonly desk: AttestationDesk
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
    // one desk for both forms of GetAttestation, so its limits count every quote
    this.desk = new AttestationDesk(issuer, log.child('getAttestation'), bounds.getAttestation)
    this.plain = createGetAttestationServer(this.desk, { connections: bounds.limits })
  }

  /** Binds and serves; resolves with the bound address (port 0 picks a free one). */
  async start(): Promise<string> {
    await this.checkTpm()
    const creds = createAttestedServerCredentials({
      issuer: this.issuer,
      log: this.log,
      handshakeTimeoutMs: this.bounds.handshakeTimeoutMs,
    })
    if (bringsServices(creds)) creds.addServicesTo(this.server)
    this.listener = await listenForBothProtocols(
      this.listen,
      {
        atls: this.server,
        atlsCredentials: creds,
        plain: this.plain,
        plainCredentials: grpc.ServerCredentials.createInsecure(),
        http: (socket, first) =>
          serveHttpGet(
            socket,
            first,
            this.desk,
            this.bounds.handshakeTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS,
          ),
      },
      'verifyService.listen',
      {
        limits: this.bounds.limits,
        log: this.log,
        firstByteTimeoutMs: this.bounds.handshakeTimeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS,
      },
    )
    const { address } = this.listener
    this.log.info('Verification service listening', { address, variant: this.issuer.variant })
    return address
  }

  /** Lets handshakes in flight finish, force-stops after graceMs; safe to call more than once. */
  stop(graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.stopping ??= (async () => {
      this.listener?.close()
      await Promise.all([shutdownGracefully(this.server, graceMs), shutdownGracefully(this.plain, graceMs)])
      this.listener?.destroy()
      this.log.info('Verification service stopped')
      this.resolveDone()
    })()
    return this.stopping
  }
}

/** tpm-ek's attested credentials bring the activation service their clients call. */
const bringsServices = (c: grpc.ServerCredentials): c is grpc.ServerCredentials & CredentialsWithServices =>
  typeof (c as Partial<CredentialsWithServices>).addServicesTo === 'function'
