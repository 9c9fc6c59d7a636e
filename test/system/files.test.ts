import { chmod, lstat, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import {
  exists,
  lstatIfPresent,
  writeFileAtomic,
  writeFileExclusive,
  writeNewSecretFilesSync,
  writeSecretFile,
} from '../../src/lib/system/index.js'
import { type SecretWrite } from '../../src/lib/system/files.js'

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

describe('secret file writers never write through a symlink', () => {
  let dir: string
  let outside: string
  let cleanup: () => Promise<void>
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    outside = path.join(dir, 'outside')
    await writeFile(outside, 'outside')
    await mkdir(path.join(dir, 'root'))
  })
  afterEach(() => cleanup())

  it('writeFileAtomic replaces a symlink at the target with a 0600 file; the link target stays', async () => {
    const file = path.join(dir, 'root', 'kubelet.key')
    await symlink(outside, file)
    await writeFileAtomic(file, 'secret')
    expect(await readFile(outside, 'utf8')).to.equal('outside')
    const written = await lstat(file)
    expect(written.isFile()).to.equal(true)
    expect(written.mode & 0o777).to.equal(0o600)
    expect(await readdir(path.dirname(file)), 'no temp file left').to.deep.equal(['kubelet.key'])
  })

  it('writeFileAtomic: links planted at guessable temp names (pid and clock) neither get the data nor stop the write', async () => {
    const file = path.join(dir, 'root', 'ca.key')
    const now = Date.now()
    for (let t = now; t < now + 2_000; t++) await symlink(outside, `${file}.tmp-${process.pid}-${t}`)
    await writeFileAtomic(file, 'secret')
    expect(await readFile(outside, 'utf8')).to.equal('outside')
    expect(await readFile(file, 'utf8')).to.equal('secret')
  })

  it('writeFileExclusive refuses a symlink at the target, even a dangling one, and writes nothing', async () => {
    const file = path.join(dir, 'root', 'mastersecret.json')
    await symlink(path.join(dir, 'nowhere'), file)
    await expect(writeFileExclusive(file, 'secret')).to.be.rejectedWith(/already exists/)
    expect(await exists(path.join(dir, 'nowhere'))).to.equal(false)
  })
})

describe('writeSecretFile: 0600 whatever the umask, never through a symlink', () => {
  let dir: string
  let outside: string
  let cleanup: () => Promise<void>
  let umask: number
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    outside = path.join(dir, 'outside')
    await writeFile(outside, 'outside')
    umask = process.umask(0) // the widest umask: open()'s mode alone would decide
  })
  afterEach(async () => {
    process.umask(umask)
    await cleanup()
  })

  for (const how of ['exclusive', 'replace'] as const satisfies readonly SecretWrite[]) {
    it(`${how}: a new file is 0600 and holds the data`, async () => {
      const file = path.join(dir, 'new', 'secret')
      await writeSecretFile(file, 'secret', how)
      expect((await lstat(file)).mode & 0o777).to.equal(0o600)
      expect(await readFile(file, 'utf8')).to.equal('secret')
    })
    it(`${how}: a symlink at the path never receives the data`, async () => {
      const file = path.join(dir, 'link')
      await symlink(outside, file)
      await writeSecretFile(file, 'secret', how).catch(() => {})
      expect(await readFile(outside, 'utf8')).to.equal('outside')
      expect((await lstat(outside)).mode & 0o777).to.not.equal(0o600)
    })
  }

  it('replace: a group- and world-readable file is replaced by a 0600 one', async () => {
    const file = path.join(dir, 'state.yaml')
    await writeFile(file, 'old')
    await chmod(file, 0o644)
    await writeSecretFile(file, 'new', 'replace')
    expect((await lstat(file)).mode & 0o777).to.equal(0o600)
    expect(await readFile(file, 'utf8')).to.equal('new')
  })

  it('exclusive: an existing file is refused and left as it was', async () => {
    await expect(writeSecretFile(outside, 'secret', 'exclusive')).to.be.rejectedWith(/already exists/)
    expect(await readFile(outside, 'utf8')).to.equal('outside')
  })
})

describe('writeNewSecretFilesSync: a batch of new 0600 files, refused where anything is', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let umask: number
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    umask = process.umask(0o022) // each case sets its own; this one is put back afterwards
  })
  afterEach(async () => {
    process.umask(umask)
    await cleanup()
  })

  const cases: Record<string, { umask: number }> = {
    "the widest umask: open()'s mode alone would decide": { umask: 0 },
    'a umask that narrows 0600 to 0400': { umask: 0o277 },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(`every file is 0600 and holds its data (${name})`, async () => {
      process.umask(tc.umask)
      const files = ['a', 'b', 'c'].map((n) => ({ file: path.join(dir, `${n}.yaml`), data: `${n}: 1\n` }))
      writeNewSecretFilesSync(files)
      for (const { file, data } of files) {
        expect((await lstat(file)).mode & 0o777, file).to.equal(0o600)
        expect(await readFile(file, 'utf8')).to.equal(data)
      }
    })
  }

  it('stops at a file or symlink already at a path, naming it, and writes nothing through it', async () => {
    const outside = path.join(dir, 'outside')
    await writeFile(outside, 'outside')
    await symlink(outside, path.join(dir, 'b.yaml'))
    const files = ['a', 'b', 'c'].map((n) => ({ file: path.join(dir, `${n}.yaml`), data: 'secret' }))
    expect(() => writeNewSecretFilesSync(files)).to.throw(`${path.join(dir, 'b.yaml')} already exists`)
    expect(await readFile(outside, 'utf8')).to.equal('outside')
    expect(await readFile(path.join(dir, 'a.yaml'), 'utf8')).to.equal('secret')
    expect(await exists(path.join(dir, 'c.yaml'))).to.equal(false)
  })
})
