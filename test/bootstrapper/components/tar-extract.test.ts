import { lstat, mkdir, readdir, readlink, realpath } from 'node:fs/promises'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { pack } from 'tar-stream'
import { expect } from '../../support/chai.js'
import { makeTempDir } from '../../support/temp.js'
import { seededRandom } from '../../support/fuzz.js'
import { extractTarGz, UnsafeArchiveError } from '../../../src/lib/bootstrapper/components/tar-extract.js'

type Entry =
  | { name: string; type: 'file'; body: string }
  | { name: string; type: 'directory' }
  | { name: string; type: 'symlink' | 'link'; linkname: string }

async function tarGz(entries: readonly Entry[]): Promise<Buffer> {
  const p = pack()
  for (const e of entries) {
    if (e.type === 'file') p.entry({ name: e.name, mode: 0o644 }, e.body)
    else if (e.type === 'directory') p.entry({ name: e.name, type: 'directory' })
    else p.entry({ name: e.name, type: e.type, linkname: e.linkname })
  }
  p.finalize()
  const parts: Buffer[] = []
  for await (const part of p) parts.push(Buffer.from(part as Uint8Array))
  return gzipSync(Buffer.concat(parts))
}

/** Every path under `dir` (lstat, links not followed). */
async function walk(dir: string): Promise<string[]> {
  const found: string[] = []
  for (const name of await readdir(dir)) {
    const p = path.join(dir, name)
    found.push(p)
    if ((await lstat(p)).isDirectory()) found.push(...(await walk(p)))
  }
  return found
}

const PARTS = ['a', 'b', 'c', '.'] as const
const LINK_TARGETS = ['.', '.', '..', '..', '../..', 'a', 'b', '../a', 'a/b', 'b/..', 'c/../..', '/tmp']

/**
 * Mostly plausible entries over few names, half of them below an earlier entry's name, so that links
 * get created and later entries go through them (`a -> .`, `a/b -> ..`, `b/file`).
 */
function randomArchive(next: () => number): Entry[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T
  const names: string[] = []
  const name = () => {
    const part = () => (next() < 0.03 ? '..' : pick(PARTS))
    const n =
      names.length > 0 && next() < 0.5
        ? `${pick(names)}/${part()}`
        : Array.from({ length: 1 + Math.floor(next() * 2) }, part).join('/')
    names.push(n)
    return next() < 0.03 ? `/${n}` : n
  }
  return Array.from({ length: 1 + Math.floor(next() * 10) }, (): Entry => {
    const r = next()
    if (r < 0.45) return { name: name(), type: 'symlink', linkname: pick(LINK_TARGETS) }
    if (r < 0.5) return { name: name(), type: 'link', linkname: name() }
    if (r < 0.65) return { name: name(), type: 'directory' }
    return { name: name(), type: 'file', body: 'payload' }
  })
}

describe('tar.gz extraction: nothing lands outside the install path', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  const chains: Record<string, Entry[]> = {
    'a -> ., a/b -> .., b/file': [
      { name: 'a', type: 'symlink', linkname: '.' },
      { name: 'a/b', type: 'symlink', linkname: '..' },
      { name: 'b/file', type: 'file', body: 'escaped' },
    ],
    'three levels of links': [
      { name: 'a', type: 'symlink', linkname: '.' },
      { name: 'a/b', type: 'symlink', linkname: '.' },
      { name: 'a/b/c', type: 'symlink', linkname: '..' },
      { name: 'c/d', type: 'symlink', linkname: '..' },
      { name: 'd/file', type: 'file', body: 'escaped' },
    ],
    'a directory written through a linked parent': [
      { name: 'up', type: 'symlink', linkname: '.' },
      { name: 'up/sub', type: 'directory' },
    ],
  }
  for (const [name, entries] of Object.entries(chains)) {
    it(`refuses a symlink chain (${name})`, async () => {
      const dest = path.join(dir, 'sandbox', 'install')
      await mkdir(dest, { recursive: true })
      await expect(extractTarGz(await tarGz(entries), dest)).to.be.rejectedWith(UnsafeArchiveError)
      expect(await readdir(dir)).to.deep.equal(['sandbox'])
      expect(await readdir(path.join(dir, 'sandbox'))).to.deep.equal(['install'])
    })
  }

  it('still extracts links that stay inside, and files beside them', async () => {
    const dest = path.join(dir, 'install')
    await extractTarGz(
      await tarGz([
        { name: 'bin/', type: 'directory' },
        { name: 'bin/tool', type: 'file', body: 'x' },
        { name: 'bin/alias', type: 'symlink', linkname: 'tool' },
        { name: 'lib', type: 'symlink', linkname: 'bin' },
      ]),
      dest,
    )
    expect(await readlink(path.join(dest, 'bin/alias'))).to.equal('tool')
    expect(await readlink(path.join(dest, 'lib'))).to.equal('bin')
  })

  it('fuzz: 800 generated archives of links, dirs, files, "..", absolute names never write outside', async function () {
    this.timeout(60_000)
    for (let seed = 1; seed <= 800; seed++) {
      const box = path.join(dir, `case-${seed}`)
      const dest = path.join(box, 'sandbox', 'install')
      await mkdir(dest, { recursive: true })
      const entries = randomArchive(seededRandom(seed))
      await extractTarGz(await tarGz(entries), dest).catch((err: unknown) => {
        // refused, or a plain conflict (a file where a directory is) named by its entry
        if (!(
          err instanceof UnsafeArchiveError ||
          /^extracting archive entry /.test(String((err as Error).message))
        ))
          throw new Error(`seed ${seed}: ${String(err)}`)
      })
      // sentinel dirs around the install path stay exactly as they were
      expect(await readdir(box), `seed ${seed}`).to.deep.equal(['sandbox'])
      expect(await readdir(path.join(box, 'sandbox')), `seed ${seed}`).to.deep.equal(['install'])
      const realDest = await realpath(dest)
      for (const p of await walk(dest)) {
        const info = await lstat(p)
        if (info.isSymbolicLink()) {
          const target = path.resolve(path.dirname(p), await readlink(p))
          expect(target === dest || target.startsWith(dest + path.sep), `seed ${seed}: ${p}`).to.equal(true)
        } else expect((await realpath(p)).startsWith(realDest), `seed ${seed}: ${p}`).to.equal(true)
      }
    }
  })
})
