/**
 * File I/O with the project's rules: secrets 0600, create-exclusive where nothing may be clobbered,
 * and reads that are bounded and refuse anything but a regular file.
 */
import { randomBytes } from 'node:crypto'
import { closeSync, constants, fchmodSync, openSync, writeSync, type Stats } from 'node:fs'
import { chmod, copyFile, lstat, mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { CliError, isErrnoException } from '../errors/index.js'

export const SECRET_FILE_MODE = 0o600

/**
 * The entry at `file` itself (a symlink is not followed), or undefined when nothing is there; any
 * other failure (a permission, a path through a file) is thrown for the caller to word.
 */
export async function lstatIfPresent(file: string): Promise<Stats | undefined> {
  try {
    return await lstat(file)
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) return undefined
    throw err
  }
}

/** The text of `file`, or undefined when nothing is there; any other failure is thrown. */
export async function readTextIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) return undefined
    throw err
  }
}

/**
 * Whether anything is at `file`, a dangling symlink included (an exclusive create would fail on
 * it); a path that cannot be looked at counts as absent.
 */
export async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  )
}

/** Writes a new file; refuses (and leaves the existing one untouched) when it already exists. */
export async function writeFileExclusive(file: string, data: string | Uint8Array, mode = SECRET_FILE_MODE) {
  await mkdir(path.dirname(file), { recursive: true })
  let handle
  try {
    handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode)
  } catch (err) {
    throw existsError(file, err)
  }
  try {
    await handle.writeFile(data)
    await handle.chmod(mode) // the umask may have narrowed or widened open()'s mode
  } finally {
    await handle.close()
  }
}

/** EEXIST as the user should read it; any other failure unchanged. */
function existsError(file: string, err: unknown): unknown {
  if (!isErrnoException(err, 'EEXIST')) return err
  return new CliError(`${file} already exists`, {
    hint: 'move it away or choose another workspace; nothing was changed',
  })
}

/**
 * Writes many small new secret files into folders that already exist, as writeSecretFile's
 * `exclusive` does (0600 whatever the umask, refused when anything is at the path), but
 * synchronously: for thousands of files of a few hundred bytes, one thread-pool round trip per
 * open, write, chmod and close costs several times the system calls themselves. It blocks the
 * event loop for the whole batch, so callers keep batches to a few hundred files.
 */
export function writeNewSecretFilesSync(files: Iterable<{ file: string; data: string }>): void {
  for (const { file, data } of files) {
    let fd
    try {
      fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, SECRET_FILE_MODE)
    } catch (err) {
      throw existsError(file, err)
    }
    try {
      const bytes = Buffer.from(data)
      for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at)
      fchmodSync(fd, SECRET_FILE_MODE) // the umask may have narrowed openSync()'s mode
    } finally {
      closeSync(fd)
    }
  }
}

/**
 * Replaces a file atomically (temp file + rename), so a crash never leaves it half-written. The
 * rename replaces whatever is at `file`, a symlink too, and never writes through it; the temp name
 * is random and created exclusively, so nothing planted beside the file receives the data.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = SECRET_FILE_MODE) {
  await replaceAtomically(file, async (tmp) => {
    const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode)
    try {
      await handle.writeFile(data)
      await handle.chmod(mode) // the umask may have narrowed or widened open()'s mode
    } finally {
      await handle.close()
    }
  })
}

/** Copies `source` over `file` as writeFileAtomic writes: a random temp name beside it, then rename. */
export async function copyFileAtomic(source: string, file: string, mode: number) {
  await replaceAtomically(file, async (tmp) => {
    await copyFile(source, tmp, constants.COPYFILE_EXCL)
    await chmod(tmp, mode)
  })
}

async function replaceAtomically(file: string, fill: (tmp: string) => Promise<void>): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true })
  const tmp = `${file}.tmp-${randomBytes(8).toString('hex')}`
  try {
    await fill(tmp)
    await rename(tmp, file)
  } catch (err) {
    await rm(tmp, { force: true })
    throw err
  }
}

/**
 * How a secret file is written. `exclusive`: a new file, refused (CliError) when anything is at the
 * path, a symlink too, so nothing is clobbered. `replace`: a complete new file swapped in by rename,
 * which replaces a symlink rather than writing through it.
 */
export type SecretWrite = 'exclusive' | 'replace'

/** The one way to write a secret (keys, tokens, kubeconfigs, state): 0600 whatever the umask, never through a symlink. */
export async function writeSecretFile(file: string, data: string | Uint8Array, how: SecretWrite) {
  await (how === 'exclusive' ? writeFileExclusive : writeFileAtomic)(file, data, SECRET_FILE_MODE)
}

/** What readSecretFile says when it refuses a file. */
export interface SecretReadHints {
  /** What the file is, for the size message: "a master secret". */
  what: string
  notRegularHint: string
  modeHint: string
}

/** Far above any secret file; keeps a wrong path from being read into memory whole. */
const SECRET_FILE_MAX_BYTES = 64 * 1024

/**
 * A secret file's bytes, `undefined` when it does not exist. Checked on the open descriptor, so the
 * file that was checked is the file that is read: no symlink (O_NOFOLLOW), a regular file (O_NONBLOCK
 * keeps a FIFO from blocking the open), no access for group or others.
 */
export async function readSecretFile(file: string, hints: SecretReadHints): Promise<Buffer | undefined> {
  const notRegular = () =>
    new CliError(`${file} is not a regular file (a symlink or other entry)`, { hint: hints.notRegularHint })
  let handle
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) return undefined
    // ELOOP: a symlink (O_NOFOLLOW); ENXIO: a socket, which has nothing to open
    if (isErrnoException(err, 'ELOOP') || isErrnoException(err, 'ENXIO')) throw notRegular()
    throw err
  }
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw notRegular()
    const mode = info.mode & 0o777
    if (mode & 0o077)
      throw new CliError(
        `${file} is mode 0${mode.toString(8)}, want 0${SECRET_FILE_MODE.toString(8)}: others could read it`,
        { hint: hints.modeHint },
      )
    if (info.size > SECRET_FILE_MAX_BYTES)
      throw new CliError(`${file} is too large for ${hints.what}: ${info.size} bytes`, {
        hint: 'check that this is the right file',
      })
    return await handle.readFile()
  } finally {
    await handle.close()
  }
}

export interface BoundedReadOptions {
  /** Larger files are refused before they are read. */
  maxBytes: number
  /** What the file is, for messages: "config", "node config", "input". */
  what: string
  /** What to do when the file does not exist. */
  missingHint?: string
}

const READ_CHUNK_BYTES = 64 * 1024

/**
 * Reads a whole regular file of at most `maxBytes`. A FIFO, device or directory is refused instead
 * of waited on (O_NONBLOCK keeps open() from blocking on a FIFO without a writer; fstat then says
 * what it is), and the size is checked while reading too, since a file can grow after fstat.
 */
export async function readRegularFile(file: string, opts: BoundedReadOptions): Promise<Buffer> {
  let handle
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch (err) {
    // exit 1 whether the path came from a flag (-f) or from the workspace: a missing input is
    // the world's state, not a wrong command line (README, exit codes)
    if (isErrnoException(err, 'ENOENT'))
      throw new CliError(`${opts.what} ${file} does not exist`, { hint: opts.missingHint })
    throw new CliError(`reading ${opts.what} ${file}`, { cause: err })
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) {
      throw new CliError(`${opts.what} ${file} is not a regular file (it is ${fileKind(stats)})`, {
        hint: 'pass the path of a regular file',
      })
    }
    if (stats.size > opts.maxBytes) throw tooLarge(file, stats.size, opts)
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const chunk = Buffer.alloc(READ_CHUNK_BYTES)
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null)
      if (bytesRead === 0) break
      total += bytesRead
      if (total > opts.maxBytes) throw tooLarge(file, total, opts)
      chunks.push(chunk.subarray(0, bytesRead))
    }
    return Buffer.concat(chunks, total)
  } finally {
    await handle.close()
  }
}

function tooLarge(file: string, size: number, opts: BoundedReadOptions): CliError {
  return new CliError(
    `${opts.what} ${file} is too large: ${size} bytes, the limit is ${opts.maxBytes} bytes`,
    { hint: 'check that this is the right file' },
  )
}

function fileKind(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory'
  if (stats.isFIFO()) return 'a FIFO'
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device'
  if (stats.isSocket()) return 'a socket'
  return 'not a file'
}
