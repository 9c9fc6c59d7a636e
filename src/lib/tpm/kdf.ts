/**
 * The TPM's key derivation functions (TPM 2.0 Part 1 §11.4.10): KDFa, SP 800-108 counter mode over
 * HMAC, and KDFe, the SP 800-56A concatenation KDF. node:crypto has neither, only the HMAC and hash
 * they are built from. Labels are given without their terminating zero octet, which both add.
 */
import { createHash, createHmac } from 'node:crypto'

const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
const ZERO = Buffer.alloc(1)

function checkBits(bits: number): number {
  if (!Number.isInteger(bits) || bits <= 0 || bits % 8 !== 0)
    throw new RangeError(`a KDF output of ${bits} bits is not a positive whole number of bytes`)
  return bits / 8
}

/** KDFa(hashAlg, key, label, contextU, contextV, bits) */
export function kdfa(
  hash: string,
  key: Buffer,
  label: string,
  contextU: Buffer,
  contextV: Buffer,
  bits: number,
): Buffer {
  const bytes = checkBits(bits)
  const blocks: Buffer[] = []
  for (let i = 1, have = 0; have < bytes; i++) {
    const block = createHmac(hash, key)
      .update(u32(i))
      .update(label, 'latin1')
      .update(ZERO)
      .update(contextU)
      .update(contextV)
      .update(u32(bits))
      .digest()
    blocks.push(block)
    have += block.length
  }
  return Buffer.concat(blocks).subarray(0, bytes)
}

/** KDFe(hashAlg, Z, label, partyUInfo, partyVInfo, bits) */
export function kdfe(
  hash: string,
  z: Buffer,
  label: string,
  partyUInfo: Buffer,
  partyVInfo: Buffer,
  bits: number,
): Buffer {
  const bytes = checkBits(bits)
  const blocks: Buffer[] = []
  for (let i = 1, have = 0; have < bytes; i++) {
    const block = createHash(hash)
      .update(u32(i))
      .update(z)
      .update(label, 'latin1')
      .update(ZERO)
      .update(partyUInfo)
      .update(partyVInfo)
      .digest()
    blocks.push(block)
    have += block.length
  }
  return Buffer.concat(blocks).subarray(0, bytes)
}
