/** The join direction's challenge RPC on the wire: its method, and the credential a tpm-ek answer carries. */
import type { ServiceDefinition } from '@grpc/grpc-js'
import { AttestationError } from '../attestation/index.js'
import type { MadeCredential } from '../tpm/index.js'

export const CHALLENGE_PATH = '/atls.Challenge/Issue'

const raw = (b: Buffer) => b
/**
 * The one RPC a client may call without attestation. An empty request gets a fresh nonce (raw 32
 * bytes). A tpm-ek client sends its activation request (EK certificates, AK public area) and gets
 * the nonce followed by a credential for that AK (encodeCredential), to activate before it attests.
 */
export const ChallengeService: ServiceDefinition = {
  issue: {
    path: CHALLENGE_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
}

/** TPM2B(credentialBlob) || TPM2B(encryptedSecret): the credential after the nonce in a challenge answer. */
export function encodeCredential(made: MadeCredential): Buffer {
  const sized = (b: Buffer) => Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b])
  return Buffer.concat([sized(made.credentialBlob), sized(made.encryptedSecret)])
}

export function decodeCredential(bytes: Buffer): MadeCredential {
  const take = (at: number, what: string): [Buffer, number] => {
    if (bytes.length < at + 2) throw new AttestationError(`challenge answer: ${what} is cut short`)
    const length = bytes.readUInt16BE(at)
    if (bytes.length < at + 2 + length) throw new AttestationError(`challenge answer: ${what} is cut short`)
    return [bytes.subarray(at + 2, at + 2 + length), at + 2 + length]
  }
  const [credentialBlob, next] = take(0, 'credentialBlob')
  const [encryptedSecret, end] = take(next, 'encryptedSecret')
  if (end !== bytes.length) throw new AttestationError('challenge answer: bytes after the credential')
  return { credentialBlob: Buffer.from(credentialBlob), encryptedSecret: Buffer.from(encryptedSecret) }
}
