/**
 * Constellation's verification API, `verify.API/GetAttestation`, over plain gRPC: the node's
 * attestation document for the caller's nonce, so Constellation's own `constellation verify` and any
 * gRPC client can attest the node. Nothing here is secret; every answer costs a TPM quote, so the
 * quotes an unauthenticated caller can start are bounded.
 */
import * as grpc from '@grpc/grpc-js'
import { APIService, type GetAttestationRequest, type GetAttestationResponse } from '../../gen/verify.js'
import type { Issuer } from '../attestation/index.js'
import { messageOf } from '../errors/index.js'
import { boundedServerOptions, peerAddress, type ConnectionLimits } from '../grpc/index.js'
import type { Logger } from '../system/index.js'

/**
 * The userData Constellation's verification service issues with (its
 * constants.ConstellationVerifyServiceUserData); its CLI refuses a document that signs anything else.
 */
export const VERIFY_SERVICE_USER_DATA = Buffer.from('VerifyService')

/** Constellation's CLI sends 32 random bytes; shorter is no fresh nonce, longer only costs hashing. */
export const MIN_NONCE_BYTES = 32
export const MAX_NONCE_BYTES = 64
/** A request is a nonce and a few bytes of framing; anything bigger is refused before decoding. */
export const MAX_REQUEST_BYTES = 1024

export interface GetAttestationLimits {
  /** Quotes in flight (running or waiting for the TPM) for one remote address. */
  perPeer?: number
  /** Quotes in flight in all; the TPM answers one at a time anyway. */
  total?: number
}

/** A genuine verifier asks once per run; a few in flight per address leave room for NAT. */
export const DEFAULT_GET_ATTESTATION_LIMITS: Required<GetAttestationLimits> = { perPeer: 2, total: 8 }

/** Retry advice sent with RESOURCE_EXHAUSTED, as the recovery endpoint does. */
const RETRY_PUSHBACK_MS = 1_000

/** Why a request got no attestation: the status each protocol answers with follows from it. */
export class AttestationRefusal extends Error {
  constructor(
    readonly reason: 'invalid' | 'busy' | 'failed',
    message: string,
  ) {
    super(message)
    this.name = 'AttestationRefusal'
  }
}

/**
 * Issues documents for GetAttestation's callers, whichever protocol they came by: checks the nonce
 * and keeps the quotes in flight within the limits before the TPM is asked.
 */
export class AttestationDesk {
  private readonly limits: Required<GetAttestationLimits>
  private readonly inFlight = new Map<string, number>()
  private total = 0

  constructor(
    private readonly issuer: Issuer,
    private readonly log: Logger,
    limits: GetAttestationLimits = {},
  ) {
    this.limits = { ...DEFAULT_GET_ATTESTATION_LIMITS, ...limits }
  }

  get perPeer(): number {
    return this.limits.perPeer
  }

  async issue(peer: string, nonce: Buffer): Promise<Buffer> {
    const bad = checkNonce(nonce)
    if (bad) throw new AttestationRefusal('invalid', bad)
    const mine = this.inFlight.get(peer) ?? 0
    if (mine >= this.limits.perPeer)
      throw new AttestationRefusal(
        'busy',
        `${mine} attestations for this address are being issued already, the most one address may wait for; retry in 1 s`,
      )
    if (this.total >= this.limits.total)
      throw new AttestationRefusal(
        'busy',
        `${this.total} attestations are being issued already, as many as the node queues; retry in 1 s`,
      )
    this.inFlight.set(peer, mine + 1)
    this.total++
    try {
      const document = await this.issuer.issue(VERIFY_SERVICE_USER_DATA, nonce)
      this.log.info('Attestation issued', { peer })
      return document
    } catch (err: unknown) {
      this.log.error('Issuing attestation failed', { peer, error: messageOf(err) })
      throw new AttestationRefusal('failed', `issuing attestation: ${messageOf(err)}`)
    } finally {
      this.total--
      const left = (this.inFlight.get(peer) ?? 1) - 1
      if (left === 0) this.inFlight.delete(peer)
      else this.inFlight.set(peer, left)
    }
  }
}

const GRPC_STATUS = {
  invalid: grpc.status.INVALID_ARGUMENT,
  busy: grpc.status.RESOURCE_EXHAUSTED,
  failed: grpc.status.INTERNAL,
} as const

/** A grpc.Server (no TLS) answering only GetAttestation; the caller binds it. */
export function createGetAttestationServer(
  desk: AttestationDesk,
  opts: { connections?: ConnectionLimits } = {},
): grpc.Server {
  const server = new grpc.Server({
    ...boundedServerOptions(opts.connections),
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    // one quote per call; a connection's further calls wait in its client, costing the node nothing
    'grpc.max_concurrent_streams': desk.perPeer,
  })
  server.addService(APIService, {
    getAttestation: (
      call: grpc.ServerUnaryCall<GetAttestationRequest, GetAttestationResponse>,
      cb: grpc.sendUnaryData<GetAttestationResponse>,
    ) => {
      desk.issue(peerAddress(call.getPeer()), call.request.nonce).then(
        (attestation) => cb(null, { attestation }),
        (err: unknown) => {
          const refusal = err instanceof AttestationRefusal ? err : undefined
          const code = GRPC_STATUS[refusal?.reason ?? 'failed']
          const pushback = refusal?.reason === 'busy' ? RETRY_PUSHBACK_MS : undefined
          cb(rpcError(code, messageOf(err), pushback))
        },
      )
    },
  })
  return server
}

function checkNonce(nonce: Buffer): string | undefined {
  if (nonce.length === 0) return 'nonce is required to issue attestation'
  if (nonce.length < MIN_NONCE_BYTES || nonce.length > MAX_NONCE_BYTES)
    return `nonce: ${nonce.length} bytes; it must be ${MIN_NONCE_BYTES} to ${MAX_NONCE_BYTES} random bytes chosen by the verifier`
  return undefined
}

function rpcError(code: grpc.status, details: string, pushbackMs?: number): Partial<grpc.ServiceError> {
  const metadata = new grpc.Metadata()
  if (pushbackMs !== undefined) metadata.set('grpc-retry-pushback-ms', String(pushbackMs))
  return { code, details, metadata }
}
