/** The master secret (`constellation-mastersecret.json`): the root of every cluster key. */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import { CliError } from '../errors/index.js'
import { lstatIfPresent, SECRET_FILE_MODE, writeFileExclusive } from '../system/index.js'

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
    throw new CliError(`${file}: not JSON`, {
      hint: 'a master secret is {"key": "<base64>", "salt": "<base64>"}',
    })
  }
  const field = (name: 'key' | 'salt', bytes: number): Buffer => {
    const v = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[name] : undefined
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(v))
      throw new CliError(`${file}: ${name}: want standard base64`)
    const value = Buffer.from(v, 'base64')
    if (value.length !== bytes)
      throw new CliError(`${file}: ${name}: want ${bytes} bytes, got ${value.length}`)
    return value
  }
  return { key: field('key', MASTER_SECRET_BYTES), salt: field('salt', MASTER_SALT_BYTES) }
}

/**
 * An existing master secret, checked before it is used: a regular file (not a symlink), readable
 * only by its owner, well-formed. `undefined` when there is none.
 */
export async function readMasterSecret(file: string): Promise<MasterSecret | undefined> {
  const info = await lstatIfPresent(file)
  if (!info) return undefined
  const keep = 'it may hold the keys of a cluster: do not delete it unless you know no node used it'
  if (!info.isFile())
    throw new CliError(`${file} is not a regular file (a symlink or other entry)`, {
      hint: `replace it with the file itself; ${keep}`,
    })
  const mode = info.mode & 0o777
  if (mode & 0o077)
    throw new CliError(
      `${file} is mode 0${mode.toString(8)}, want 0${SECRET_FILE_MODE.toString(8)}: others could read it`,
      { hint: `chmod 600 ${file}, then run init again` },
    )
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    return parseMasterSecret(await handle.readFile('utf8'), file)
  } finally {
    await handle.close()
  }
}
