/**
 * Join direction, client side: one connection to a server that is not attested here (as in
 * Constellation's join flow), on which the client asks for a challenge, attests with a document
 * bound to it and to the connection's TLS session, and then makes its calls.
 */
import * as grpc from '@grpc/grpc-js'
import type { Issuer } from '../attestation/index.js'
import { AttestationError } from '../attestation/index.js'
import { callRaw } from '../grpc/index.js'
import type { MadeCredential } from '../tpm/index.js'
import { createUnattestedServerCredentials, UNATTESTED_SERVER_NAME } from './channel-credentials.js'
import {
  ATTEST_PATH,
  ChallengeService,
  CHALLENGE_PATH,
  decodeCredential,
  encodeAttestation,
  sessionBinding,
} from './challenge.js'
import { NONCE_BYTES } from './nonce.js'
import { targetLeavingFrom } from './leave-from.js'

export interface AttestedClientChannelOptions {
  /** Bounds the TLS handshake and each of Issue and Attest. */
  deadlineMs?: number
  /** The address this node's connection leaves from, when the host has several. */
  localAddress?: string
}

/**
 * A channel whose one connection has attested: make clients on it with `clientOn`, and close it
 * when done. The attestation holds for that connection only; should grpc-js ever dial again, calls
 * on the new connection are refused, and the caller asks again on a new channel.
 */
export async function openAttestedClientChannel(
  target: string,
  issuer: Issuer,
  { deadlineMs = 10_000, localAddress }: AttestedClientChannelOptions = {},
): Promise<grpc.Channel> {
  const bindings: Buffer[] = []
  const credentials = createUnattestedServerCredentials({
    handshakeTimeoutMs: deadlineMs,
    localAddress,
    onSecure: (tls) => bindings.push(sessionBinding(tls)),
  })
  const channel = new grpc.Channel(targetLeavingFrom(target, localAddress), credentials, {
    'grpc.ssl_target_name_override': UNATTESTED_SERVER_NAME,
    'grpc.enable_retries': 0,
    'grpc.enable_channelz': 0, // one node's calls, and nothing reads channelz
    // the attested connection is this channel's alone; the global pool would also sweep every
    // other channel's subchannels whenever one closes (a cost per join that grows with the joins)
    'grpc.use_local_subchannel_pool': 1,
  })
  try {
    const challenge = clientOn(channel, grpc.makeGenericClientConstructor(ChallengeService, 'challenge'))
    const call = (path: string, request: Buffer) => callRaw(challenge, path, request, deadlineMs)
    const activation = issuer.activationRequest ? await issuer.activationRequest() : Buffer.alloc(0)
    const answer = await call(CHALLENGE_PATH, activation)
    if (answer.length < NONCE_BYTES || (activation.length === 0 && answer.length !== NONCE_BYTES))
      throw new AttestationError(`server challenge has ${answer.length} bytes, want ${NONCE_BYTES}`)
    const nonce = answer.subarray(0, NONCE_BYTES)
    // tpm-ek: the TPM unwraps the credential; the document then carries what it found
    const proof =
      activation.length > 0
        ? await activate(issuer, decodeCredential(answer.subarray(NONCE_BYTES)))
        : undefined
    const binding = onlyConnection(bindings)
    await call(ATTEST_PATH, encodeAttestation(issuer.oid, await issuer.issue(binding, nonce, proof)))
    onlyConnection(bindings)
    return channel
  } catch (err) {
    channel.close()
    throw err
  }
}

/** A client of `Client`'s service whose calls go over `channel` (the attested connection). */
export function clientOn<C extends grpc.Client>(
  channel: grpc.Channel,
  Client: new (address: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) => C,
): C {
  return new Client(channel.getTarget(), grpc.credentials.createInsecure(), { channelOverride: channel })
}

/** The binding of the channel's one connection; a second one means the attestation would not be on it. */
function onlyConnection(bindings: Buffer[]): Buffer {
  const [binding] = bindings
  if (!binding || bindings.length !== 1)
    throw new AttestationError(
      `the channel made ${bindings.length} connections while attesting, and an attestation holds for one: ask again`,
    )
  return binding
}

function activate(issuer: Issuer, made: MadeCredential): Promise<Buffer> {
  if (!issuer.activate) throw new AttestationError(`${issuer.variant} cannot activate a credential`)
  return issuer.activate(made)
}
