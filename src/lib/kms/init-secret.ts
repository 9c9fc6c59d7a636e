/**
 * The init secret: a random printable password the operator holds (state file, hex) and the node
 * knows only as a bcrypt hash (node config `initSecretHash`), as Constellation's Terraform does.
 */
import { randomInt } from 'node:crypto'
import bcrypt from 'bcryptjs'

export const INIT_SECRET_LENGTH = 32
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/** bcrypt's default cost; the node compares once per Init call. */
export const INIT_SECRET_BCRYPT_COST = 10

/** 32 characters from a 62-letter alphabet (~190 bits), drawn without modulo bias. */
export function generateInitSecret(pick: (max: number) => number = randomInt): Buffer {
  return Buffer.from(
    Array.from({ length: INIT_SECRET_LENGTH }, () => ALPHABET[pick(ALPHABET.length)]).join(''),
    'latin1',
  )
}

/**
 * The bcrypt password for an init secret: one Latin-1 character per byte, so every byte counts
 * (for the ASCII secrets generated here this equals hashing the raw bytes, as Constellation does).
 */
export function initSecretPassword(secret: Buffer): string {
  return secret.toString('latin1')
}

export function hashInitSecret(secret: Buffer, cost = INIT_SECRET_BCRYPT_COST): Promise<string> {
  return bcrypt.hash(initSecretPassword(secret), cost)
}

export function checkInitSecret(secret: Buffer, hash: string): Promise<boolean> {
  return bcrypt.compare(initSecretPassword(secret), hash)
}
