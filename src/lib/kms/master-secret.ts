/** The master secret (`constellation-mastersecret.json`): the root of every cluster key. */
import { randomBytes } from 'node:crypto'
import { writeFileExclusive } from '../system/index.js'

export const MASTER_SECRET_BYTES = 32
export const MASTER_SALT_BYTES = 32

export interface MasterSecret {
  key: Buffer
  salt: Buffer
}

export function generateMasterSecret(random: (n: number) => Buffer = randomBytes): MasterSecret {
  return { key: random(MASTER_SECRET_BYTES), salt: random(MASTER_SALT_BYTES) }
}

/** `{key, salt}` in standard base64, as Constellation writes it. */
export function encodeMasterSecret(secret: MasterSecret): string {
  return (
    JSON.stringify({ key: secret.key.toString('base64'), salt: secret.salt.toString('base64') }, null, '\t') +
    '\n'
  )
}

/** Create-exclusive and 0600: an existing master secret is never clobbered. */
export async function writeMasterSecret(file: string, secret: MasterSecret): Promise<void> {
  await writeFileExclusive(file, encodeMasterSecret(secret))
}

export function parseMasterSecret(text: string, file: string): MasterSecret {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw new Error(`${file}: not JSON`)
  }
  const field = (name: 'key' | 'salt'): Buffer => {
    const v = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[name] : undefined
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(v))
      throw new Error(`${file}: ${name}: want standard base64`)
    return Buffer.from(v, 'base64')
  }
  return { key: field('key'), salt: field('salt') }
}
