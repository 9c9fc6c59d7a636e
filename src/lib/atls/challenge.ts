/**
 * The join direction's two RPCs before attestation, on the wire: Issue (a nonce, and the credential a
 * tpm-ek answer carries) and Attest (the document), both on the one connection the node then asks on.
 */
import type { ServiceDefinition } from '@grpc/grpc-js'
import type { TLSSocket } from 'node:tls'
import { AttestationError } from '../attestation/index.js'
import { rawUnaryMethod } from '../grpc/index.js'
import type { MadeCredential } from '../tpm/index.js'

export const CHALLENGE_PATH = '/atls.Challenge/Issue'
export const ATTEST_PATH = '/atls.Challenge/Attest'

/**
 * The TLS session a join-direction document is bound to (its userData): an RFC 5705 exporter value,
 * which both ends compute and nobody else can. A document made for one connection is worth nothing
 * on another, as a document bound to a certificate key is worth nothing without that key.
 * TLS 1.3 only (both ends insist): there the exporter is unique to the session.
 */
export function sessionBinding(tls: TLSSocket): Buffer {
  return tls.exportKeyingMaterial(SESSION_BINDING_BYTES, SESSION_BINDING_LABEL, Buffer.alloc(0))
}
const SESSION_BINDING_LABEL = 'EXPORTER-constellation-join-attestation'
const SESSION_BINDING_BYTES = 32

/**
 * The two RPCs a client may call before it attested, once each per connection. Issue: an empty
 * request gets a fresh nonce (raw 32 bytes); a tpm-ek client sends its activation request (EK
 * certificates, AK public area) and gets the nonce followed by a credential for that AK
 * (encodeCredential), to activate before it attests. Attest: encodeAttestation(oid, document), the
 * document bound to that nonce and to sessionBinding(); an empty answer means the connection is
 * attested, and only then may it call anything else.
 */
export const ChallengeService: ServiceDefinition = {
  issue: rawUnaryMethod(CHALLENGE_PATH),
  attest: rawUnaryMethod(ATTEST_PATH),
}

/** u8 length || the variant's OID (ASCII) || the document: which validator the document is for, and it. */
export function encodeAttestation(oid: string, document: Buffer): Buffer {
  const name = Buffer.from(oid)
  if (name.length > 255) throw new AttestationError(`attestation OID ${oid} is longer than 255 bytes`)
  return Buffer.concat([Buffer.from([name.length]), name, document])
}

export function decodeAttestation(bytes: Buffer): { oid: string; document: Buffer } {
  const length = bytes[0]
  if (length === undefined || bytes.length < 1 + length)
    throw new AttestationError('attest request: the variant OID is cut short')
  const oid = bytes.subarray(1, 1 + length).toString('ascii')
  // X.660: the first arc is 0, 1 or 2
  if (!/^[0-2](\.[0-9]+)+$/.test(oid))
    throw new AttestationError('attest request: the variant OID is not an OID')
  return { oid, document: bytes.subarray(1 + length) }
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
