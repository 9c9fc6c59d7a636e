import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { CryptsetupDisk, STATE_DISK_TOKEN_TYPE } from '../../src/lib/statedisk/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { spyingRunner } from '../support/runner.js'
import { createBlankImage, createLuksImage, TEST_PBKDF } from '../support/luks-image.js'

describe('state disk (real cryptsetup on an image file)', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  it('replaces the initial passphrase; keys travel through a 0600 file or stdin, never argv, and the file is gone after', async () => {
    const disk0 = await createLuksImage(dir)
    const spyArgv: string[][] = []
    const spyKeyFileModes: number[] = []
    const scratch = path.join(dir, 'scratch')
    const runner = spyingRunner(async (file, args) => {
      spyArgv.push([file, ...args])
      if (args[0] === 'luksChangeKey') {
        const { stat } = await import('node:fs/promises')
        spyKeyFileModes.push((await stat(args[args.length - 1] ?? '')).mode & 0o777)
      }
    })
    const disk = new CryptsetupDisk(disk0.image, runner, scratch, TEST_PBKDF)
    const uuid = await disk.uuid()
    expect(uuid).to.match(/^[0-9a-f-]{36}$/)
    const newKey = randomBytes(32)
    await disk.changeKey(disk0.initialKeyFile, newKey)
    expect(await disk.opensWith(newKey)).to.equal(true)
    expect(await disk.opensWith(disk0.initialKey)).to.equal(false)
    expect(spyKeyFileModes).to.deep.equal([0o600])
    expect(await readdir(scratch)).to.deep.equal([])
    const argv = spyArgv.flat().join(' ')
    for (const encoding of ['hex', 'base64', 'latin1'] as const) {
      expect(argv).not.to.include(newKey.toString(encoding))
      expect(argv).not.to.include(disk0.initialKey.toString(encoding))
    }
    // Re-keying keeps the UUID: the second question is answered without cryptsetup.
    expect(await disk.uuid()).to.equal(uuid)
    expect(spyArgv.filter((a) => a[1] === 'luksUUID')).to.have.length(1)
  })

  it('callers asking for the UUID while the first read runs share that one cryptsetup process', async () => {
    const disk0 = await createLuksImage(dir)
    let reads = 0
    const runner = spyingRunner((_file, args) => {
      if (args[0] === 'luksUUID') reads++
    })
    const disk = new CryptsetupDisk(disk0.image, runner, path.join(dir, 's'))
    const answers = await Promise.all([disk.uuid(), disk.uuid(), disk.uuid()])
    expect(new Set(answers).size).to.equal(1)
    expect(reads).to.equal(1)
  })

  it('names the command and exit code when cryptsetup fails', async () => {
    const disk = new CryptsetupDisk(path.join(dir, 'missing.img'), createRunner(), path.join(dir, 's'))
    await expect(disk.uuid()).to.be.rejectedWith(/cryptsetup luksUUID .*missing.img exited with code \d+/)
    // a failure is not remembered: the next call asks cryptsetup again
    await expect(disk.uuid()).to.be.rejectedWith(/cryptsetup luksUUID/)
  })
})

describe('state disk life cycle in the LUKS2 header (real cryptsetup and blkid on image files)', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())
  const runner = createRunner()

  it('blank → formatted (key on stdin only) → marked new → initialized, the mark replaced in place', async () => {
    const image = await createBlankImage(dir)
    const argv: string[] = []
    const disk = new CryptsetupDisk(
      image,
      spyingRunner((f, a) => void argv.push([f, ...a].join(' '))),
      dir,
      TEST_PBKDF,
    )
    expect(await disk.probe()).to.deep.equal({ kind: 'blank' })
    const key = randomBytes(32)
    await disk.format(key)
    expect(await disk.probe()).to.deep.equal({ kind: 'luks2', mark: undefined })
    expect(await disk.opensWith(key)).to.equal(true)
    await disk.writeMark('new')
    expect(await disk.probe()).to.deep.equal({ kind: 'luks2', mark: 'new' })
    await disk.writeMark('initialized')
    const found = await disk.readMark()
    expect(found).to.deep.equal({ tokenId: 0, mark: 'initialized' })
    const { stdout } = await runner.run('cryptsetup', ['token', 'export', '--token-id', '0', image])
    expect(JSON.parse(stdout)).to.deep.equal({
      type: STATE_DISK_TOKEN_TYPE,
      keyslots: [],
      state: 'initialized',
    })
    // one token of ours, no second one beside it
    await expect(runner.run('cryptsetup', ['token', 'export', '--token-id', '1', image])).to.be.rejected
    for (const encoding of ['hex', 'base64', 'latin1'] as const)
      expect(argv.join('\n')).not.to.include(key.toString(encoding))
  })

  it('a reformat gives the disk a new UUID, and the old key no longer opens it', async () => {
    const image = await createBlankImage(dir)
    const disk = new CryptsetupDisk(image, runner, dir, TEST_PBKDF)
    const first = randomBytes(32)
    await disk.format(first)
    const uuid = await disk.uuid()
    await disk.format(randomBytes(32))
    expect(await disk.uuid()).not.to.equal(uuid)
    expect(await disk.opensWith(first)).to.equal(false)
  })

  it('a file system, or a LUKS1 volume, is foreign: named by its type', async () => {
    const ext4 = await createBlankImage(dir)
    await runner.run('mkfs.ext4', ['-q', ext4])
    expect(await new CryptsetupDisk(ext4, runner, dir).probe()).to.deep.equal({
      kind: 'foreign',
      type: 'ext4',
    })
    const luks1 = path.join(dir, 'luks1.img')
    await runner.run('truncate', ['-s', '20M', luks1])
    await runner.run(
      'cryptsetup',
      ['luksFormat', '--type', 'luks1', '--batch-mode', '--iter-time', '1', '--key-file', '-', luks1],
      { input: randomBytes(32) },
    )
    expect(await new CryptsetupDisk(luks1, runner, dir).probe()).to.deep.equal({
      kind: 'foreign',
      type: 'crypto_LUKS version 1',
    })
  })

  it('a token of our type with an unknown state is an error, not a guess', async () => {
    const image = await createBlankImage(dir)
    const disk = new CryptsetupDisk(image, runner, dir, TEST_PBKDF)
    await disk.format(randomBytes(32))
    await runner.run('cryptsetup', ['token', 'import', '--json-file', '-', image], {
      input: Buffer.from(JSON.stringify({ type: STATE_DISK_TOKEN_TYPE, keyslots: [], state: 'wiped' })),
    })
    await expect(disk.probe()).to.be.rejectedWith(/unreadable mark/)
    const err = (await disk.readMark().catch((e: unknown) => e)) as Error
    expect(String(err.cause)).to.match(/token 0 \(constellation-state-disk\) has state "wiped"/)
  })
})
