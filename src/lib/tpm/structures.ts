/** Parsers for the TPM structures an attestation carries; any malformed input gives a TpmParseError. */
import { createPublicKey, type KeyObject } from 'node:crypto'
import { TpmParseError, TpmReader, type TpmWriter } from './buffer.js'
import {
  PCR_COUNT,
  TPM_ALG,
  TPM_ECC_NIST_P256,
  TPM_GENERATED_VALUE,
  TPM_ST,
  TPMA_OBJECT,
} from './constants.js'

export interface PcrSelection {
  hashAlg: number
  pcrs: number[]
}

export interface TpmsAttestQuote {
  magic: number
  type: number
  qualifiedSigner: Buffer
  extraData: Buffer
  clock: bigint
  resetCount: number
  restartCount: number
  safe: boolean
  firmwareVersion: bigint
  pcrSelections: PcrSelection[]
  pcrDigest: Buffer
}

export type TpmtSignature =
  | { sigAlg: typeof TPM_ALG.RSASSA | typeof TPM_ALG.RSAPSS; hashAlg: number; signature: Buffer }
  | { sigAlg: typeof TPM_ALG.ECDSA; hashAlg: number; r: Buffer; s: Buffer }

export type TpmtPublic =
  | {
      type: typeof TPM_ALG.RSA
      nameAlg: number
      attributes: number
      scheme: Scheme
      /** Only on storage and endorsement keys (restricted decrypt); signing keys have none. */
      symmetric?: SymmetricDef
      keyBits: number
      exponent: number
      modulus: Buffer
    }
  | {
      type: typeof TPM_ALG.ECC
      nameAlg: number
      attributes: number
      scheme: Scheme
      symmetric?: SymmetricDef
      curve: number
      x: Buffer
      y: Buffer
    }

export interface SymmetricDef {
  alg: number
  keyBits: number
  mode: number
}

export interface Scheme {
  alg: number
  hashAlg?: number
}

const MAX_SELECTIONS = 16
const MAX_SELECT_BYTES = 4

export function marshalPcrSelection(w: TpmWriter, selections: readonly PcrSelection[]): void {
  w.u32(selections.length)
  for (const s of selections) {
    const bitmap = Buffer.alloc(3)
    for (const pcr of s.pcrs) {
      if (!Number.isInteger(pcr) || pcr < 0 || pcr >= PCR_COUNT)
        throw new RangeError(`PCR index ${pcr} out of range`)
      bitmap[pcr >> 3] = (bitmap[pcr >> 3] ?? 0) | (1 << (pcr & 7))
    }
    w.u16(s.hashAlg).u8(bitmap.length).bytes(bitmap)
  }
}

export function readPcrSelection(r: TpmReader, field: string): PcrSelection[] {
  const count = r.u32(`${field}.count`)
  if (count > MAX_SELECTIONS) r.fail(`${field}.count`, `${count} selections exceed ${MAX_SELECTIONS}`)
  const out: PcrSelection[] = []
  for (let i = 0; i < count; i++) {
    const hashAlg = r.u16(`${field}[${i}].hash`)
    const size = r.u8(`${field}[${i}].sizeofSelect`)
    if (size > MAX_SELECT_BYTES) r.fail(`${field}[${i}].sizeofSelect`, `${size} exceeds ${MAX_SELECT_BYTES}`)
    const bitmap = r.bytes(size, `${field}[${i}].pcrSelect`)
    const pcrs: number[] = []
    bitmap.forEach((byte, idx) => {
      for (let bit = 0; bit < 8; bit++) if (byte & (1 << bit)) pcrs.push(idx * 8 + bit)
    })
    out.push({ hashAlg, pcrs })
  }
  return out
}

/** TPMS_ATTEST of a quote; other attestation types are refused. */
export function parseQuoteAttest(bytes: Buffer): TpmsAttestQuote {
  const r = new TpmReader(bytes, 'TPMS_ATTEST')
  const magic = r.u32('magic')
  if (magic !== TPM_GENERATED_VALUE) r.fail('magic', `0x${magic.toString(16)} is not TPM_GENERATED_VALUE`)
  const type = r.u16('type')
  if (type !== TPM_ST.ATTEST_QUOTE) r.fail('type', `0x${type.toString(16)} is not TPM_ST_ATTEST_QUOTE`)
  const qualifiedSigner = r.sized('qualifiedSigner')
  const extraData = r.sized('extraData', 64)
  const clock = r.u64('clockInfo.clock')
  const resetCount = r.u32('clockInfo.resetCount')
  const restartCount = r.u32('clockInfo.restartCount')
  const safe = r.u8('clockInfo.safe') !== 0
  const firmwareVersion = r.u64('firmwareVersion')
  const pcrSelections = readPcrSelection(r, 'attested.quote.pcrSelect')
  const pcrDigest = r.sized('attested.quote.pcrDigest', 64)
  r.end()
  return {
    magic,
    type,
    qualifiedSigner,
    extraData,
    clock,
    resetCount,
    restartCount,
    safe,
    firmwareVersion,
    pcrSelections,
    pcrDigest,
  }
}

export function parseSignature(bytes: Buffer): TpmtSignature {
  const r = new TpmReader(bytes, 'TPMT_SIGNATURE')
  const sig = readSignature(r)
  r.end()
  return sig
}

export function readSignature(r: TpmReader): TpmtSignature {
  const sigAlg = r.u16('sigAlg')
  switch (sigAlg) {
    case TPM_ALG.RSASSA:
    case TPM_ALG.RSAPSS:
      return { sigAlg, hashAlg: r.u16('hash'), signature: r.sized('sig', 512) }
    case TPM_ALG.ECDSA:
      return { sigAlg, hashAlg: r.u16('hash'), r: r.sized('signatureR', 66), s: r.sized('signatureS', 66) }
    default:
      return r.fail('sigAlg', `unsupported signature algorithm 0x${sigAlg.toString(16)}`)
  }
}

export function parsePublic(bytes: Buffer): TpmtPublic {
  const r = new TpmReader(bytes, 'TPMT_PUBLIC')
  const pub = readPublic(r)
  r.end()
  return pub
}

export function readPublic(r: TpmReader): TpmtPublic {
  const type = r.u16('type')
  const nameAlg = r.u16('nameAlg')
  const attributes = r.u32('objectAttributes')
  r.sized('authPolicy', 64)
  const symmetricAlg = r.u16('parameters.symmetric.algorithm')
  let symmetric: SymmetricDef | undefined
  if (symmetricAlg !== TPM_ALG.NULL) {
    if (attributes & TPMA_OBJECT.sign)
      r.fail('parameters.symmetric', 'a signing key has no symmetric algorithm')
    const keyBits = r.u16('parameters.symmetric.keyBits')
    symmetric = { alg: symmetricAlg, keyBits, mode: r.u16('parameters.symmetric.mode') }
  }
  const schemeAlg = r.u16('parameters.scheme.scheme')
  const scheme: Scheme =
    schemeAlg === TPM_ALG.NULL
      ? { alg: schemeAlg }
      : { alg: schemeAlg, hashAlg: r.u16('parameters.scheme.hashAlg') }
  if (type === TPM_ALG.RSA) {
    const keyBits = r.u16('parameters.keyBits')
    const exponent = r.u32('parameters.exponent')
    const modulus = r.sized('unique.rsa', 512)
    if (modulus.length === 0 || modulus.length * 8 !== keyBits)
      r.fail('unique.rsa', `modulus of ${modulus.length} bytes does not match keyBits ${keyBits}`)
    return { type, nameAlg, attributes, scheme, ...(symmetric && { symmetric }), keyBits, exponent, modulus }
  }
  if (type === TPM_ALG.ECC) {
    const curve = r.u16('parameters.curveID')
    const kdf = r.u16('parameters.kdf.scheme')
    if (kdf !== TPM_ALG.NULL) r.u16('parameters.kdf.hashAlg')
    const x = r.sized('unique.ecc.x', 66)
    const y = r.sized('unique.ecc.y', 66)
    return { type, nameAlg, attributes, scheme, ...(symmetric && { symmetric }), curve, x, y }
  }
  return r.fail('type', `unsupported key type 0x${type.toString(16)}`)
}

/** The public key as a node:crypto KeyObject (built from JWK; node:crypto checks the point/modulus). */
export function publicKeyOf(pub: TpmtPublic): KeyObject {
  const b64url = (b: Buffer) => b.toString('base64url')
  try {
    if (pub.type === TPM_ALG.RSA) {
      const e = Buffer.alloc(4)
      e.writeUInt32BE(pub.exponent === 0 ? 65537 : pub.exponent)
      const exponent = e.subarray(e.findIndex((byte) => byte !== 0))
      return createPublicKey({
        key: { kty: 'RSA', n: b64url(pub.modulus), e: b64url(exponent) },
        format: 'jwk',
      })
    }
    if (pub.curve !== TPM_ECC_NIST_P256)
      throw new TpmParseError(`TPMT_PUBLIC: curve 0x${pub.curve.toString(16)} is not NIST P-256`)
    if (pub.x.length !== 32 || pub.y.length !== 32)
      throw new TpmParseError('TPMT_PUBLIC: a P-256 point needs 32-byte coordinates')
    return createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: b64url(pub.x), y: b64url(pub.y) },
      format: 'jwk',
    })
  } catch (err: unknown) {
    if (err instanceof TpmParseError) throw err
    throw new TpmParseError(
      `TPMT_PUBLIC: not a usable public key: ${err instanceof Error ? err.message : String(err)}`,
    )
  }
}
