/** The master secret (`constellation-mastersecret.json`): the root of every cluster key. */
import { randomBytes } from 'node:crypto'
import { CliError } from '../errors/index.js'
import { readSecretFile, writeSecretFile } from '../system/index.js'

export const MASTER_SECRET_BYTES = 32
export const MASTER_SALT_BYTES = 32
/** Shortest master key and salt a cluster may use (Constellation's MasterSecretLengthMin, and its salt minimum). */
export const MASTER_KEY_MIN_BYTES = 16
export const MASTER_SALT_MIN_BYTES = 32

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
  await writeSecretFile(file, encodeMasterSecret(secret), 'exclusive')
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
  const keep = 'it may hold the keys of a cluster: do not delete it unless you know no node used it'
  const text = await readSecretFile(file, {
    what: 'a master secret',
    notRegularHint: `replace it with the file itself; ${keep}`,
    modeHint: `chmod 600 ${file}, then run init again`,
  })
  return text === undefined ? undefined : parseMasterSecret(text.toString('utf8'), file)
}

/** What a node persisted for its key service (Constellation's /var/config/{mastersecret,salt}). */
export interface NodeMasterSecretFiles {
  masterSecretFile: string
  masterSaltFile: string
}

/**
 * The master secret a control plane persisted when init succeeded on it or it joined: raw bytes in
 * two files, each refused unless it is a regular file only its owner can read, of a usable length.
 */
export async function readNodeMasterSecret(files: NodeMasterSecretFiles): Promise<MasterSecret> {
  const read = async (file: string, minBytes: number): Promise<Buffer> => {
    const data = await readSecretFile(file, {
      what: 'a master secret',
      notRegularHint: 'the node writes it as a regular file; replace the entry with the file itself',
      modeHint: `chmod 600 ${file}, then start the key service again`,
    })
    if (data === undefined)
      throw new CliError(`master secret file ${file} does not exist`, {
        hint: 'a node writes it when init succeeds on it or it joins as a control plane; run the key service on such a node, with the same root in its node config',
      })
    if (data.length < minBytes)
      throw new CliError(
        `master secret file ${file} is malformed: ${data.length} bytes, want at least ${minBytes}`,
      )
    return data
  }
  return {
    key: await read(files.masterSecretFile, MASTER_KEY_MIN_BYTES),
    salt: await read(files.masterSaltFile, MASTER_SALT_MIN_BYTES),
  }
}
