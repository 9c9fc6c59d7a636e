import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { backupCustomResources } from '../../src/lib/upgrade/backup.js'
import type { ClusterReader, ListPage } from '../../src/lib/upgrade/kube-reader.js'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const GROUP = 'stub.constellation.invalid'

/** CRD i has plural `things<i>` and kind `Thing<i>`; each of its lists has `pages` pages of two objects. */
const crd = (i: number) => ({
  metadata: { name: `things${i}.${GROUP}` },
  spec: { group: GROUP, names: { plural: `things${i}`, kind: `Thing${i}` }, versions: [{ name: 'v1' }] },
})

/**
 * A stub ClusterReader: each listPage answers after a turn of the event loop, and the stub
 * records how many were unanswered at once and which lists started after a failure it gave.
 */
function stubReader(crds: number, pages: number, failPlural?: string) {
  const seen = { maxInFlight: 0, startedAfterFailure: [] as string[], requestsAfterFailure: 0 }
  let inFlight = 0
  let failed = false
  const reader: ClusterReader = {
    serverVersion: () => Promise.resolve('v1.31.0'),
    configMapData: () => Promise.resolve(undefined),
    async listPage(group, version, plural, limit, token) {
      if (failed) seen.requestsAfterFailure++
      if (failed && token === undefined) seen.startedAfterFailure.push(plural)
      seen.maxInFlight = Math.max(seen.maxInFlight, ++inFlight)
      await new Promise((r) => setTimeout(r, 2))
      inFlight--
      if (plural === 'customresourcedefinitions')
        return { items: Array.from({ length: crds }, (_, i) => crd(i)) } satisfies ListPage
      if (plural === failPlural) {
        failed = true
        throw new Error(`listing ${plural}.${group}/${version}: 403 Forbidden`)
      }
      const n = Number(token ?? 0)
      const items = Array.from({ length: Math.min(limit, 2) }, (_, k) => ({
        metadata: { name: `${plural}-${n}-${k}`, namespace: 'ns' },
      }))
      return { items, continueToken: n + 1 < pages ? String(n + 1) : undefined }
    },
  }
  return { reader, seen }
}

describe('pre-upgrade backup: listing and writing (stub ClusterReader)', () => {
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(() => tmp.cleanup())

  it('lists several resources at once, never more than four, and writes every object', async () => {
    const { reader, seen } = stubReader(10, 3)
    expect(await backupCustomResources(reader, tmp.dir)).to.deep.equal({ crds: 10, customResources: 60 })
    expect(seen.maxInFlight).to.be.within(2, 4)
    for (let i = 0; i < 10; i++) {
      const dir = path.join(tmp.dir, 'backups', GROUP, 'v1', 'ns', `Thing${i}`)
      expect(await readdir(dir)).to.have.length(6)
    }
  })

  it('writes files 0600 in folders 0700', async () => {
    const { reader } = stubReader(1, 1)
    await backupCustomResources(reader, tmp.dir)
    let dir = path.join(tmp.dir, 'backups')
    for (const segment of ['', GROUP, 'v1', 'ns', 'Thing0']) {
      dir = path.join(dir, segment)
      expect((await stat(dir)).mode & 0o777, dir).to.equal(0o700)
    }
    expect((await stat(path.join(dir, 'things0-0-0.yaml'))).mode & 0o777).to.equal(0o600)
    expect((await stat(path.join(tmp.dir, 'backups/crds', `things0.${GROUP}.yaml`))).mode & 0o777).to.equal(
      0o600,
    )
  })

  it('stops at a failed listing, naming it; no listing starts after it, running ones stop', async () => {
    const { reader, seen } = stubReader(10, 20, 'things1')
    await expect(backupCustomResources(reader, tmp.dir)).to.be.rejectedWith(/listing things1\.stub/)
    expect(seen.startedAfterFailure).to.deep.equal([])
    // at most the page each of the three other running listings had already asked for
    expect(seen.requestsAfterFailure).to.be.at.most(3)
  })

  it('stops when a file cannot be written, naming the file, and leaves it as it was', async () => {
    const { reader } = stubReader(2, 1)
    const dir = path.join(tmp.dir, 'backups', GROUP, 'v1', 'ns', 'Thing1')
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const planted = path.join(dir, 'things1-0-1.yaml')
    await writeFile(planted, 'not ours\n')
    const err: unknown = await backupCustomResources(reader, tmp.dir).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).to.be.an('error').with.property('message', 'writing the backup')
    expect((err as Error).cause)
      .to.be.an('error')
      .with.property('message', `${planted} already exists`)
    expect(await readFile(planted, 'utf8')).to.equal('not ours\n')
  })
})
