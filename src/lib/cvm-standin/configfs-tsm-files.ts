/** File operations of the configfs-tsm stand-in: consistent snapshots of inputs, atomic outputs. */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { open, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { isErrnoException } from '../errors/index.js'

/** The report entry was removed under the stand-in (the client is done with it): stop serving it. */
export class EntryGoneError extends Error {
  constructor(file: string) {
    super(`${file}: the report entry is gone`)
    this.name = 'EntryGoneError'
  }
}

/** An input file's bytes and the modification time they were written at. */
export interface Snapshot {
  data: Buffer
  mtimeNs: bigint
}

/** Far above an input's 64 bytes: enough to see (and refuse) an oversized write whole. */
const INPUT_READ_MAX_BYTES = 4096
const SNAPSHOT_ATTEMPTS = 3

export const sameSnapshot = (a: Snapshot, b: Snapshot | undefined): boolean =>
  b !== undefined && a.mtimeNs === b.mtimeNs && a.data.equals(b.data)

/**
 * The file's bytes with a modification time that did not change while they were read, or undefined
 * while a writer is still at it (its next write brings another event).
 */
export async function fileSnapshot(file: string): Promise<Snapshot | undefined> {
  let handle
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) throw new EntryGoneError(file)
    throw err
  }
  try {
    for (let attempt = 0; attempt < SNAPSHOT_ATTEMPTS; attempt++) {
      const before = await handle.stat({ bigint: true })
      const buf = Buffer.alloc(INPUT_READ_MAX_BYTES + 1)
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0)
      const after = await handle.stat({ bigint: true })
      if (before.mtimeNs === after.mtimeNs && before.size === after.size && after.size === BigInt(bytesRead))
        return { data: buf.subarray(0, bytesRead), mtimeNs: after.mtimeNs }
    }
    return undefined
  } finally {
    await handle.close()
  }
}

/**
 * Replaces an attribute by a temp file renamed over it, so a reader sees old or new, never half.
 * Never creates the entry directory: a removed entry stays removed.
 */
export async function replaceFile(file: string, data: string | Buffer): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${randomBytes(6).toString('hex')}`)
  try {
    await writeFile(tmp, data, { flag: 'wx', mode: 0o644 })
    await rename(tmp, file)
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined) // the entry may be gone with it
    if (isErrnoException(err, 'ENOENT')) throw new EntryGoneError(file)
    throw err
  }
}

export async function removeFile(file: string): Promise<void> {
  await rm(file, { force: true })
}
