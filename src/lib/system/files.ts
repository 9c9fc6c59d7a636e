/** File writes with the project's rules: secrets 0600, create-exclusive where nothing may be clobbered. */
import { constants } from 'node:fs'
import { mkdir, open, rename, writeFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { CliError, isErrnoException } from '../errors/index.js'

export const SECRET_FILE_MODE = 0o600

/** Writes a new file; refuses (and leaves the existing one untouched) when it already exists. */
export async function writeFileExclusive(file: string, data: string | Uint8Array, mode = SECRET_FILE_MODE) {
  await mkdir(path.dirname(file), { recursive: true })
  let handle
  try {
    handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode)
  } catch (err) {
    if (isErrnoException(err, 'EEXIST')) {
      throw new CliError(
        `${file} already exists`,
        1,
        'move it away or choose another workspace; nothing was changed',
      )
    }
    throw err
  }
  try {
    await handle.writeFile(data)
    await handle.chmod(mode) // the umask may have narrowed or widened open()'s mode
  } finally {
    await handle.close()
  }
}

/** Replaces a file atomically (temp file + rename), so a crash never leaves it half-written. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = SECRET_FILE_MODE) {
  await mkdir(path.dirname(file), { recursive: true })
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`
  try {
    await writeFile(tmp, data, { mode, flag: 'wx' })
    await rename(tmp, file)
  } catch (err) {
    await rm(tmp, { force: true })
    throw err
  }
}
