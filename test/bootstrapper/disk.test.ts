import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { CryptsetupDisk } from '../../src/lib/bootstrapper/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { spyingRunner } from '../support/runner.js'
import { createLuksImage, TEST_PBKDF } from '../support/luks-image.js'

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
