import { mkdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { exists, lstatIfPresent } from '../../src/lib/system/index.js'

describe('file helpers', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    await writeFile(path.join(dir, 'file'), 'x')
    await mkdir(path.join(dir, 'dir'))
    await symlink(path.join(dir, 'gone'), path.join(dir, 'dangling'))
  })
  afterEach(() => cleanup())

  const entries: Record<string, { name: string; want: 'file' | 'dir' | 'symlink' | 'missing' | 'error' }> = {
    'a regular file': { name: 'file', want: 'file' },
    'a directory': { name: 'dir', want: 'dir' },
    'a dangling symlink is there (not followed)': { name: 'dangling', want: 'symlink' },
    'nothing at the path': { name: 'absent', want: 'missing' },
    'a path through a file is an error, not "missing"': { name: 'file/below', want: 'error' },
  }
  for (const [name, tc] of Object.entries(entries)) {
    it(`lstatIfPresent: ${name}`, async () => {
      const got = await lstatIfPresent(path.join(dir, tc.name)).then(
        (s) => (!s ? 'missing' : s.isSymbolicLink() ? 'symlink' : s.isDirectory() ? 'dir' : 'file'),
        (err: NodeJS.ErrnoException) => (err.code === 'ENOTDIR' ? 'error' : `unexpected ${err.code}`),
      )
      expect(got).to.equal(tc.want)
    })
    it(`exists: ${name}`, async () => {
      expect(await exists(path.join(dir, tc.name))).to.equal(tc.want !== 'missing' && tc.want !== 'error')
    })
  }
})
