/**
 * Extracts a .tar.gz into a directory, streaming, and refuses any entry that could land or point
 * outside it: absolute names, `..`, a parent path through a symlink (`a -> .`, `a/b -> ..`,
 * `b/file`), and symlinks whose target, followed through the links already on disk, leaves it.
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { lstat, mkdir, readlink, realpath, rm, symlink } from 'node:fs/promises'
import path from 'node:path'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip } from 'node:zlib'
import { extract as tarExtract, type Header } from 'tar-stream'

/** File bytes one archive may write (a gzip bomb stops here, having used no more than this on disk). */
export const MAX_EXTRACTED_BYTES = 2 * 1024 * 1024 * 1024
/** Symlinks followed while resolving one link target (Linux's own limit is 40). */
const MAX_LINK_HOPS = 40

export class UnsafeArchiveError extends Error {
  constructor(entry: string, why: string) {
    super(`archive entry ${JSON.stringify(entry)} ${why}`)
    this.name = 'UnsafeArchiveError'
  }
}

export interface ExtractOptions {
  maxBytes?: number
}

/** `archive` is the .tar.gz itself or the path of a file holding it. */
export async function extractTarGz(
  archive: Buffer | string,
  destination: string,
  opts: ExtractOptions = {},
): Promise<void> {
  await mkdir(destination, { recursive: true })
  const root = await realpath(destination)
  const budget = { left: opts.maxBytes ?? MAX_EXTRACTED_BYTES, limit: opts.maxBytes ?? MAX_EXTRACTED_BYTES }
  const links: Array<{ name: string; file: string }> = []
  const extractor = tarExtract()
  const source = typeof archive === 'string' ? createReadStream(archive) : Readable.from([archive])
  const done = (async () => {
    for await (const entry of extractor) {
      const { header } = entry
      try {
        await writeEntry(header, entry as AsyncIterable<Buffer>, root, budget, links) // streamx yields Buffers
      } catch (err) {
        if (err instanceof UnsafeArchiveError) throw err
        throw new Error(`extracting archive entry ${JSON.stringify(header.name)}`, { cause: err })
      }
      entry.resume() // drains what writeEntry did not read (directories, links)
    }
  })()
  try {
    await Promise.all([pipeline(source, createGunzip(), extractor), done])
  } catch (err) {
    extractor.destroy()
    await done.catch(() => {})
    throw err
  }
  await refuseEscapingLinks(root, links)
}

/** The path inside `root` an entry name resolves to; throws for `..`, absolute names. */
export function entryTarget(name: string, root: string): string {
  if (path.isAbsolute(name)) throw new UnsafeArchiveError(name, 'is an absolute path')
  if (name.split(/[\\/]/).includes('..')) throw new UnsafeArchiveError(name, 'contains a ".." path element')
  return path.join(root, name)
}

async function writeEntry(
  header: Header,
  body: AsyncIterable<Buffer>,
  root: string,
  budget: { left: number; limit: number },
  links: Array<{ name: string; file: string }>,
): Promise<void> {
  const target = entryTarget(header.name, root)
  if (header.type === 'directory') {
    if (target === root) return
    await refuseLinkedParents(header.name, root, target, true)
    await mkdir(target, { recursive: true, mode: header.mode ?? 0o755 })
    return
  }
  if (target === root) throw new UnsafeArchiveError(header.name, 'names the install path itself')
  await refuseLinkedParents(header.name, root, target, false)
  await mkdir(path.dirname(target), { recursive: true })
  if (header.type === 'file') {
    await rm(target, { force: true })
    // 'wx': never through a file or link that appeared since
    const out = createWriteStream(target, { flags: 'wx', mode: (header.mode ?? 0o644) & 0o777 })
    await pipeline(body, countBytes(header.name, budget), out)
    return
  }
  if (header.type === 'symlink') {
    const linkname = header.linkname ?? ''
    if (path.isAbsolute(linkname))
      throw new UnsafeArchiveError(header.name, `links to the absolute path ${linkname}`)
    if ((await resolveWithin(root, path.dirname(target), linkname)) === undefined)
      throw new UnsafeArchiveError(header.name, `links to ${linkname}, outside the install path`)
    await rm(target, { force: true })
    await symlink(linkname, target)
    links.push({ name: header.name, file: target })
    return
  }
  throw new UnsafeArchiveError(header.name, `has unsupported type ${header.type ?? 'unknown'}`)
}

/** Refuses an entry when any existing directory on its way (or, for a directory, itself) is a symlink. */
async function refuseLinkedParents(name: string, root: string, target: string, self: boolean) {
  const parts = path.relative(root, target).split(path.sep)
  if (!self) parts.pop()
  let current = root
  for (const part of parts) {
    current = path.join(current, part)
    const info = await lstat(current).catch(() => undefined)
    if (!info) return // nothing below it exists yet: mkdir makes plain directories
    if (info.isSymbolicLink())
      throw new UnsafeArchiveError(name, `has a symlink in its path (${path.relative(root, current)})`)
  }
}

/**
 * Where `linkname`, read in directory `from` (a real directory inside `root`), leads, following the
 * links on disk; undefined when it leaves `root`. Parts that do not exist yet are taken as written.
 */
async function resolveWithin(
  root: string,
  from: string,
  linkname: string,
  hops = { left: MAX_LINK_HOPS },
): Promise<string | undefined> {
  if (path.isAbsolute(linkname)) return undefined
  let current = from
  for (const part of linkname.split(/[\\/]/)) {
    if (part === '' || part === '.') continue
    if (part === '..') {
      if (current === root) return undefined
      current = path.dirname(current)
      continue
    }
    const next = path.join(current, part)
    const info = await lstat(next).catch(() => undefined)
    if (!info?.isSymbolicLink()) {
      current = next
      continue
    }
    if (--hops.left < 0) return undefined
    const resolved = await resolveWithin(root, current, await readlink(next), hops)
    if (resolved === undefined) return undefined
    current = resolved
  }
  return current
}

/** A later entry can change where an earlier link leads (`l -> x/..`, then `x -> .`): check them all at the end. */
async function refuseEscapingLinks(root: string, links: ReadonlyArray<{ name: string; file: string }>) {
  for (const { name, file } of links) {
    if (!(await lstat(file).catch(() => undefined))?.isSymbolicLink()) continue // replaced by a later entry
    const linkname = await readlink(file)
    if ((await resolveWithin(root, path.dirname(file), linkname)) !== undefined) continue
    await rm(file, { force: true })
    throw new UnsafeArchiveError(name, `links to ${linkname}, which leads outside the install path`)
  }
}

function countBytes(name: string, budget: { left: number; limit: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      budget.left -= chunk.length
      if (budget.left < 0)
        return callback(
          new UnsafeArchiveError(name, `makes the archive exceed ${budget.limit} extracted bytes`),
        )
      callback(null, chunk)
    },
  })
}
