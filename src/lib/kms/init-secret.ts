/**
 * The init secret: a random printable password the operator holds (state file, hex) and the node
 * knows only as a bcrypt hash (node config `initSecretHash`), as Constellation's Terraform does.
 */
import { randomInt } from 'node:crypto'
import bcrypt from 'bcryptjs'

export const INIT_SECRET_LENGTH = 32
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/**
 * bcrypt's minimum cost. A work factor slows down guessing low-entropy passwords; this secret is
 * ~190 random bits (and never under MIN_INIT_SECRET_BYTES), out of reach at any cost. What the cost
 * does buy is CPU on the node for every Init call, and Init is open to anyone who can reach port
 * 9000: at cost 10 (Constellation's) each guess cost the node ~95 ms, at 4 ~1.5 ms. Hashes of any
 * cost verify, so Constellation's cost-10 hashes keep working.
 */
export const INIT_SECRET_BCRYPT_COST = 4
/** What the state may hold: shorter secrets are refused when the state is loaded. */
export const MIN_INIT_SECRET_BYTES = 16

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
