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

/** A grpc.Server (no TLS) answering only GetAttestation; the caller binds it. */
export function createGetAttestationServer(
  issuer: Issuer,
  log: Logger,
  opts: { connections?: ConnectionLimits; limits?: GetAttestationLimits } = {},
): grpc.Server {
  const limits = { ...DEFAULT_GET_ATTESTATION_LIMITS, ...opts.limits }
  const inFlight = new Map<string, number>()
  let total = 0
  const server = new grpc.Server({
    ...boundedServerOptions(opts.connections),
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    // one quote per call, and a connection may not open streams beyond what the limits admit
    'grpc.max_concurrent_streams': limits.perPeer,
  })
  server.addService(APIService, {
    getAttestation: (
      call: grpc.ServerUnaryCall<GetAttestationRequest, GetAttestationResponse>,
      cb: grpc.sendUnaryData<GetAttestationResponse>,
    ) => {
      const peer = peerAddress(call.getPeer())
      const bad = checkNonce(call.request.nonce)
      if (bad) return cb(rpcError(grpc.status.INVALID_ARGUMENT, bad))
      const mine = inFlight.get(peer) ?? 0
      if (mine >= limits.perPeer || total >= limits.total) {
        const why =
          mine >= limits.perPeer
            ? `${mine} attestations for this address are being issued already, the most one address may wait for`
            : `${total} attestations are being issued already, as many as the node queues`
        return cb(rpcError(grpc.status.RESOURCE_EXHAUSTED, `${why}; retry in 1 s`, RETRY_PUSHBACK_MS))
      }
      inFlight.set(peer, mine + 1)
      total++
      issuer
        .issue(VERIFY_SERVICE_USER_DATA, call.request.nonce)
        .then(
          (attestation) => {
            log.info('Attestation issued', { peer })
            cb(null, { attestation })
          },
          (err: unknown) => {
            log.error('Issuing attestation failed', { peer, error: messageOf(err) })
            cb(rpcError(grpc.status.INTERNAL, `issuing attestation: ${messageOf(err)}`))
          },
        )
        .finally(() => {
          total--
          const left = (inFlight.get(peer) ?? 1) - 1
          if (left === 0) inFlight.delete(peer)
          else inFlight.set(peer, left)
        })
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
