/**
 * Detached signatures in the form `cosign sign-blob` writes and `cosign verify-blob --key` reads:
 * the base64 of an ECDSA P-256 signature (ASN.1 DER) over the file's SHA-256. `openssl dgst
 * -sha256 -sign/-verify` makes and checks the same DER bytes, so any of the three verifies the others.
 */
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { CliError, messageOf } from '../errors/index.js'
import { MeasurementsRefusedError } from './refusal.js'

/** Cosign's default key type; Constellation signs its measurements with such a key. */
const CURVE = 'prime256v1'
/** A DER ECDSA P-256 signature is at most 72 bytes; base64 of that, with room for line breaks. */
const MAX_SIGNATURE_CHARS = 512

/** A PEM private key (PKCS#8 or SEC1 "EC PRIVATE KEY"); `source` names it in errors, never its bytes. */
export function loadSigningKey(pem: string, source: string): KeyObject {
  if (/-----BEGIN ENCRYPTED [A-Z ]*PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem))
    throw new CliError(`${source} is an encrypted private key`, {
      hint: 'decrypt it into a file only you can read (`openssl pkey -in KEY -out plain.pem`, then chmod 600) and pass that; a passphrase prompt is not supported',
    })
  let key: KeyObject
  try {
    key = createPrivateKey({ key: pem, format: 'pem' })
  } catch (err) {
    throw new CliError(`${source} is not a PEM private key: ${messageOf(err)}`, {
      hint: 'pass an ECDSA P-256 key in PEM, e.g. from `openssl ecparam -name prime256v1 -genkey -noout`',
    })
  }
  checkP256(key, source, 'private')
  return key
}

/** A PEM public key (SubjectPublicKeyInfo, as `cosign generate-key-pair` writes cosign.pub). */
export function loadVerifyingKey(pem: string, source: string): KeyObject {
  let key: KeyObject
  try {
    key = createPublicKey({ key: pem, format: 'pem' })
  } catch (err) {
    throw new CliError(`${source} is not a PEM public key: ${messageOf(err)}`, {
      hint: 'give the signer\'s "-----BEGIN PUBLIC KEY-----" (e.g. cosign.pub)',
    })
  }
  checkP256(key, source, 'public')
  return key
}

function checkP256(key: KeyObject, source: string, kind: 'private' | 'public'): void {
  const curve = key.asymmetricKeyDetails?.namedCurve
  if (key.asymmetricKeyType !== 'ec' || curve !== CURVE)
    throw new CliError(
      `${source} is a ${key.asymmetricKeyType ?? 'unknown'}${curve ? ` ${curve}` : ''} ${kind} key, not ECDSA P-256 (prime256v1)`,
      { hint: 'cosign sign-blob signatures are ECDSA P-256 over SHA-256; use such a key' },
    )
}

/** The signature as `cosign sign-blob` prints it: base64, no line break. */
export function signBlob(data: Buffer, key: KeyObject): string {
  return sign('sha256', data, { key, dsaEncoding: 'der' }).toString('base64')
}

function verifies(data: Buffer, der: Buffer, key: KeyObject): boolean {
  try {
    return verify('sha256', data, { key, dsaEncoding: 'der' }, der)
  } catch {
    return false // a malformed DER signature is as bad as a wrong one
  }
}

/**
 * Checks `signature` (base64 text, surrounding whitespace allowed) over `data`; refuses with the
 * reason `signature` otherwise. `what` names the signed file in the message.
 */
export function verifyBlob(data: Buffer, signature: Buffer, key: KeyObject, what: string): void {
  const text = signature.toString('latin1').trim()
  if (text.length === 0 || text.length > MAX_SIGNATURE_CHARS || !/^[A-Za-z0-9+/\r\n]+={0,2}$/.test(text))
    throw new MeasurementsRefusedError(
      'signature',
      `the signature of ${what} is not a base64 ECDSA signature (${text.length} characters)`,
      'the signature file must hold what `cosign sign-blob` or `constellation measurements sign` wrote',
    )
  const der = Buffer.from(text.replace(/\s+/g, ''), 'base64')
  if (!verifies(data, der, key))
    throw new MeasurementsRefusedError(
      'signature',
      `the signature does not match ${what} under the pinned public key: the file was changed, or signed with another key`,
      'nothing was written; get the measurements and signature from the image builder, and check which key the config pins',
    )
}
