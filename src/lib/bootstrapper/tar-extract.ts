/** Extracts a .tar.gz into a directory, refusing entries that would land outside it. */
import { createGunzip } from 'node:zlib'
import { mkdir, symlink, writeFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { extract as tarExtract, type Header } from 'tar-stream'

export class UnsafeArchiveError extends Error {
  constructor(entry: string, why: string) {
    super(`archive entry ${JSON.stringify(entry)} ${why}`)
    this.name = 'UnsafeArchiveError'
  }
}

export async function extractTarGz(archive: Buffer, destination: string): Promise<void> {
  await mkdir(destination, { recursive: true })
  const extractor = tarExtract()
  const done = (async () => {
    for await (const entry of extractor) {
      const body = await readAll(entry as AsyncIterable<Buffer>) // streamx yields Buffers for tar entries
      await writeEntry(entry.header, body, destination)
    }
  })()
  await Promise.all([pipeline(Readable.from([archive]), createGunzip(), extractor), done])
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const part of stream) parts.push(part)
  return Buffer.concat(parts)
}

/** The path inside `destination` an entry name resolves to; throws for `..`, absolute names. */
export function entryTarget(name: string, destination: string): string {
  if (path.isAbsolute(name)) throw new UnsafeArchiveError(name, 'is an absolute path')
  if (name.split(/[\\/]/).includes('..')) throw new UnsafeArchiveError(name, 'contains a ".." path element')
  return path.join(destination, name)
}

async function writeEntry(header: Header, body: Buffer, destination: string): Promise<void> {
  const target = entryTarget(header.name, destination)
  switch (header.type) {
    case 'directory':
      await mkdir(target, { recursive: true, mode: header.mode ?? 0o755 })
      return
    case 'file':
      await mkdir(path.dirname(target), { recursive: true })
      await rm(target, { force: true })
      await writeFile(target, body, { mode: (header.mode ?? 0o644) & 0o777 })
      return
    case 'symlink': {
      const linkTarget = header.linkname ?? ''
      if (path.isAbsolute(linkTarget))
        throw new UnsafeArchiveError(header.name, `links to the absolute path ${linkTarget}`)
      const resolved = path.resolve(path.dirname(target), linkTarget)
      if (resolved !== destination && !resolved.startsWith(destination + path.sep))
        throw new UnsafeArchiveError(header.name, `links to ${linkTarget}, outside the install path`)
      await mkdir(path.dirname(target), { recursive: true })
      await rm(target, { force: true })
      await symlink(linkTarget, target)
      return
    }
    default:
      throw new UnsafeArchiveError(header.name, `has unsupported type ${header.type ?? 'unknown'}`)
  }
}
