/** TPM Names (nameAlg || H(TPMT_PUBLIC)) and the hash algorithms they and sessions use. */
import { createHash } from 'node:crypto'
import { TpmParseError } from './buffer.js'
import { TPM_ALG } from './constants.js'

export interface HashAlgorithm {
  alg: number
  /** node:crypto's name for it */
  name: 'sha256' | 'sha384'
  digestBytes: number
}

/** The hashes an EK profile key can name itself with; SHA-1 is refused. */
const HASHES: ReadonlyMap<number, HashAlgorithm> = new Map([
  [TPM_ALG.SHA256, { alg: TPM_ALG.SHA256, name: 'sha256', digestBytes: 32 }],
  [TPM_ALG.SHA384, { alg: TPM_ALG.SHA384, name: 'sha384', digestBytes: 48 }],
])

/** `what` names the field in the error, e.g. "TPMT_PUBLIC nameAlg". */
export function hashAlgorithm(alg: number, what: string): HashAlgorithm {
  const h = HASHES.get(alg)
  if (!h) throw new TpmParseError(`${what}: hash algorithm 0x${alg.toString(16)} is not SHA-256 or SHA-384`)
  return h
}

/** The Name of the object whose marshalled TPMT_PUBLIC this is. */
export function objectName(publicArea: Buffer): Buffer {
  if (publicArea.length < 4) throw new TpmParseError('TPMT_PUBLIC: too short to carry a nameAlg')
  const h = hashAlgorithm(publicArea.readUInt16BE(2), 'TPMT_PUBLIC nameAlg')
  return Buffer.concat([publicArea.subarray(2, 4), createHash(h.name).update(publicArea).digest()])
}

/** Checks that `name` is a well-formed object Name (not a handle) and returns its hash algorithm. */
export function checkObjectName(name: Buffer): HashAlgorithm {
  if (name.length < 2) throw new TpmParseError(`TPM2B_NAME: ${name.length} bytes cannot hold a nameAlg`)
  const h = hashAlgorithm(name.readUInt16BE(0), 'TPM2B_NAME nameAlg')
  if (name.length !== 2 + h.digestBytes)
    throw new TpmParseError(
      `TPM2B_NAME: ${name.length} bytes, but a ${h.name} Name has ${2 + h.digestBytes} bytes`,
    )
  return h
}
