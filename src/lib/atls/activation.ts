/**
 * Credential activation after a server-attested handshake (tpm-ek: init, verify, recover). The
 * quote in the server's certificate proves what the AK signed, not that a TPM holds the AK; so
 * before the client trusts the connection, it wraps a fresh secret for the EK in the server's
 * certificate and the AK that quoted (TPM2_MakeCredential) and asks the node to unwrap it
 * (`/atls.Activation/Activate`). The request carries nothing secret and the answer is a one-off
 * random value, so the exchange runs on a second connection to the same address, before the
 * first one is handed to gRPC.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import { AttestationError, type ActivationTarget, type Issuer } from '../attestation/index.js'
import { rawUnaryMethod } from '../grpc/index.js'
import type { Logger } from '../system/index.js'
import { makeCredential } from '../tpm/index.js'
import { decodeCredential, encodeCredential } from './challenge.js'

export const ACTIVATE_PATH = '/atls.Activation/Activate'
const SECRET_BYTES = 32

export const ActivationService: grpc.ServiceDefinition = { activate: rawUnaryMethod(ACTIVATE_PATH) }

/** Node side: unwraps a credential with the TPM the issuer quotes with; logs each one (never the secret). */
export function addActivationService(server: grpc.Server, issuer: Issuer, log?: Logger): void {
  const activate = issuer.activate?.bind(issuer)
  if (!activate) return
  server.addService(ActivationService, {
    activate: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      let made
      try {
        made = decodeCredential(call.request)
      } catch (err) {
        return cb({ code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message })
      }
      const peer = call.getPeer()
      activate(made).then(
        (secret) => {
          log?.info('Credential activated for an attesting client', { peer, variant: issuer.variant })
          cb(null, secret)
        },
        (err: unknown) => {
          const error = err instanceof Error ? err.message : String(err)
          log?.warn('Credential activation failed', { peer, error })
          cb({ code: grpc.status.FAILED_PRECONDITION, details: error })
        },
      )
    },
  })
}

/**
 * Client side: `call` sends the request over a connection of the caller's choosing; resolves once
 * the node unwrapped the secret made for `target`, rejects with an AttestationError otherwise.
 */
export async function proveActivation(
  target: ActivationTarget,
  call: (request: Buffer) => Promise<Buffer>,
): Promise<void> {
  const secret = randomBytes(SECRET_BYTES)
  const request = encodeCredential(makeCredential(target.ek, target.akName, secret))
  const answer = await call(request).catch((cause: unknown) => {
    throw new AttestationError(
      `credential activation failed: the node did not unwrap a credential for its EK and AK (${cause instanceof Error ? cause.message : String(cause)})`,
      { cause },
    )
  })
  if (answer.length !== secret.length || !timingSafeEqual(answer, secret))
    throw new AttestationError(
      'credential activation failed: the node answered another secret (its AK is not in the TPM of that EK)',
    )
}
