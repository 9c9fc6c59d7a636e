/**
 * TPM2_MakeCredential computed by the verifier, no TPM needed (TPM 2.0 Part 1 §24, with the seed of
 * §B.10.4 for RSA and §C.6.4 for ECC): wraps a secret so that only the TPM holding this EK, with an
 * object of this Name loaded, gets it back from TPM2_ActivateCredential.
 */
import {
  constants,
  createCipheriv,
  createECDH,
  createHmac,
  createPublicKey,
  publicEncrypt,
  randomBytes,
  type KeyObject,
  type X509Certificate,
} from 'node:crypto'
import { TpmParseError, TpmWriter } from './buffer.js'
import { TPM_ALG, TPM_ECC_NIST_P256, TPM_ECC_NIST_P384, TPMA_OBJECT } from './constants.js'
import { kdfa, kdfe } from './kdf.js'
import { checkObjectName, hashAlgorithm } from './names.js'
import { parsePublic, publicKeyOf } from './structures.js'

/** The EK's public key with the algorithms its template fixes for credential protection. */
export interface EkPublicKey {
  key: KeyObject
  /** The EK's nameAlg: hashes the seed's KDFs, the OAEP padding and the outer HMAC. */
  nameAlg: number
  /** AES key size of the EK's symmetric definition (always CFB mode). */
  symmetricKeyBits: number
}

/** The two halves TPM2_ActivateCredential takes, as the contents of their TPM2Bs (no size field). */
export interface MadeCredential {
  /** TPM2B_ID_OBJECT: TPM2B_DIGEST(outer HMAC) || AES-CFB(TPM2B_DIGEST(credential)) */
  credentialBlob: Buffer
  /** TPM2B_ENCRYPTED_SECRET: the seed, RSA-OAEP-encrypted or as an ephemeral ECDH point */
  encryptedSecret: Buffer
}

const CURVES: ReadonlyMap<number, { nodeName: string; jwk: string; bytes: number }> = new Map([
  [TPM_ECC_NIST_P256, { nodeName: 'prime256v1', jwk: 'P-256', bytes: 32 }],
  [TPM_ECC_NIST_P384, { nodeName: 'secp384r1', jwk: 'P-384', bytes: 48 }],
])
const IDENTITY = 'IDENTITY'

const fail = (why: string): never => {
  throw new TpmParseError(`EK public key: ${why}`)
}

/** From the EK's TPMT_PUBLIC, which says its nameAlg and symmetric algorithm itself. */
export function ekPublicKeyFromPublicArea(publicArea: Buffer): EkPublicKey {
  const pub = parsePublic(publicArea)
  const wanted = TPMA_OBJECT.restricted | TPMA_OBJECT.decrypt
  if ((pub.attributes & wanted) !== wanted) fail('not a restricted decryption key')
  const sym = pub.symmetric
  if (
    !sym ||
    sym.alg !== TPM_ALG.AES ||
    sym.mode !== TPM_ALG.CFB ||
    (sym.keyBits !== 128 && sym.keyBits !== 256)
  )
    return fail('its symmetric algorithm is not AES-128-CFB or AES-256-CFB')
  hashAlgorithm(pub.nameAlg, 'EK public key nameAlg')
  let key: KeyObject
  if (pub.type === TPM_ALG.RSA) key = publicKeyOf(pub)
  else {
    const curve = CURVES.get(pub.curve) ?? fail(`curve 0x${pub.curve.toString(16)} is not P-256 or P-384`)
    key = ecKey(curve.jwk, fullWidth(pub.x, curve.bytes), fullWidth(pub.y, curve.bytes))
  }
  return { key, nameAlg: pub.nameAlg, symmetricKeyBits: sym.keyBits }
}

/**
 * From the EK certificate's key; the EK Credential Profile's templates fix the rest: RSA 2048 and
 * ECC P-256 (L-1, L-2, H-1, H-2) use SHA-256 and AES-128, ECC P-384 (H-3) SHA-384 and AES-256.
 */
export function ekPublicKeyFromCertificate(cert: X509Certificate): EkPublicKey {
  const key = cert.publicKey
  const details = key.asymmetricKeyDetails
  if (key.asymmetricKeyType === 'rsa' && details?.modulusLength === 2048)
    return { key, nameAlg: TPM_ALG.SHA256, symmetricKeyBits: 128 }
  if (key.asymmetricKeyType === 'ec' && details?.namedCurve === 'prime256v1')
    return { key, nameAlg: TPM_ALG.SHA256, symmetricKeyBits: 128 }
  if (key.asymmetricKeyType === 'ec' && details?.namedCurve === 'secp384r1')
    return { key, nameAlg: TPM_ALG.SHA384, symmetricKeyBits: 256 }
  const what =
    key.asymmetricKeyType === 'rsa'
      ? `RSA ${details?.modulusLength ?? '?'}`
      : `${key.asymmetricKeyType ?? 'unknown'} ${details?.namedCurve ?? ''}`.trim()
  return fail(`${what} is not an EK Credential Profile key (RSA 2048, ECC P-256 or P-384)`)
}

/**
 * Wraps `credential` (1 to digest-size bytes, a secret the verifier picks) for the object named
 * `objectName` in the TPM holding `ek`. A fresh random seed each call.
 */
export function makeCredential(ek: EkPublicKey, objectName: Buffer, credential: Buffer): MadeCredential {
  checkObjectName(objectName)
  const hash = hashAlgorithm(ek.nameAlg, 'EK nameAlg')
  if (credential.length === 0 || credential.length > hash.digestBytes)
    throw new RangeError(`a credential has 1 to ${hash.digestBytes} bytes, got ${credential.length}`)
  const { seed, encryptedSecret } = ek.key.asymmetricKeyType === 'rsa' ? rsaSeed(ek) : eccSeed(ek)

  const symKey = kdfa(hash.name, seed, 'STORAGE', objectName, Buffer.alloc(0), ek.symmetricKeyBits)
  const cipher = createCipheriv(`aes-${ek.symmetricKeyBits}-cfb`, symKey, Buffer.alloc(16))
  const plain = new TpmWriter().sized(credential).toBuffer()
  const encIdentity = Buffer.concat([cipher.update(plain), cipher.final()])

  const hmacKey = kdfa(hash.name, seed, 'INTEGRITY', Buffer.alloc(0), Buffer.alloc(0), hash.digestBytes * 8)
  const outerHmac = createHmac(hash.name, hmacKey).update(encIdentity).update(objectName).digest()
  const credentialBlob = new TpmWriter().sized(outerHmac).bytes(encIdentity).toBuffer()
  return { credentialBlob, encryptedSecret }
}

/** §B.10.4: a random seed of the nameAlg's digest size, RSA-OAEP with label "IDENTITY\0". */
function rsaSeed(ek: EkPublicKey): { seed: Buffer; encryptedSecret: Buffer } {
  const hash = hashAlgorithm(ek.nameAlg, 'EK nameAlg')
  const seed = randomBytes(hash.digestBytes)
  const encryptedSecret = publicEncrypt(
    {
      key: ek.key,
      padding: constants.RSA_PKCS1_OAEP_PADDING,
      oaepHash: hash.name,
      oaepLabel: Buffer.from(`${IDENTITY}\0`, 'latin1'),
    },
    seed,
  )
  return { seed, encryptedSecret }
}

/** §C.6.4: one-pass ECDH with an ephemeral key; seed = KDFe(Z, "IDENTITY", ephemeral x, EK x). */
function eccSeed(ek: EkPublicKey): { seed: Buffer; encryptedSecret: Buffer } {
  const hash = hashAlgorithm(ek.nameAlg, 'EK nameAlg')
  const jwk = ek.key.export({ format: 'jwk' })
  const curve =
    [...CURVES.values()].find((c) => c.jwk === jwk.crv) ?? fail(`curve ${jwk.crv} is not P-256 or P-384`)
  if (typeof jwk.x !== 'string' || typeof jwk.y !== 'string') return fail('an EC key without coordinates')
  const ekX = Buffer.from(jwk.x, 'base64url')
  const ekY = Buffer.from(jwk.y, 'base64url')
  const ephemeral = createECDH(curve.nodeName)
  const point = ephemeral.generateKeys() // 0x04 || x || y, each coordinate full width
  const z = ephemeral.computeSecret(Buffer.concat([Buffer.from([0x04]), ekX, ekY]))
  const ephX = point.subarray(1, 1 + curve.bytes)
  const ephY = point.subarray(1 + curve.bytes)
  const seed = kdfe(hash.name, z, IDENTITY, ephX, ekX, hash.digestBytes * 8)
  return { seed, encryptedSecret: new TpmWriter().sized(ephX).sized(ephY).toBuffer() }
}

/** A coordinate with any leading zeros a TPM dropped put back. */
function fullWidth(coordinate: Buffer, bytes: number): Buffer {
  if (coordinate.length > bytes) fail(`a coordinate of ${coordinate.length} bytes on a ${bytes}-byte curve`)
  return Buffer.concat([Buffer.alloc(bytes - coordinate.length), coordinate])
}

/** node:crypto checks that the point is on the curve. */
function ecKey(crv: string, x: Buffer, y: Buffer): KeyObject {
  try {
    return createPublicKey({
      key: { kty: 'EC', crv, x: x.toString('base64url'), y: y.toString('base64url') },
      format: 'jwk',
    })
  } catch (err: unknown) {
    return fail(`not a point on ${crv}: ${err instanceof Error ? err.message : String(err)}`)
  }
}
