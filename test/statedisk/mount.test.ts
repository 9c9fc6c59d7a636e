/**
 * The production mount boundary, checked as far as these machines allow (no device-mapper): the
 * command sequence it runs, and that the real cryptsetup and mkfs.ext4 accept its arguments.
 */
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { nodePaths } from '../../src/lib/paths.js'
import { deviceMapperMounter } from '../../src/lib/statedisk/index.js'
import { STATE_MAPPING } from '../../src/lib/statedisk/mount.js'
import { createRunner, type Runner } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { createBlankImage, createLuksImage } from '../support/luks-image.js'
import { makeTempDir } from '../support/temp.js'

describe('state disk mount (device-mapper and mount(8))', function () {
  this.timeout(30_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  /** Records every command and answers success; the key must come on stdin. */
  function recordingRunner() {
    const calls: Array<{ argv: string[]; input?: Buffer }> = []
    const runner: Runner = {
      run: (file, args, opts) => {
        calls.push({ argv: [file, ...args], input: opts?.input as Buffer | undefined })
        return Promise.resolve({ stdout: '', stderr: '' })
      },
    }
    return { calls, runner }
  }

  for (const fresh of [true, false])
    it(`${fresh ? 'a fresh disk: open, mkfs, mount' : 'a rebooted disk: open, mount'}, then one bind mount per state directory`, async () => {
      const paths = nodePaths(path.join(dir, 'root'))
      const { calls, runner } = recordingRunner()
      const key = randomBytes(32)
      await deviceMapperMounter(runner, paths).mount('/dev/sdb', key, { fresh })
      const mapped = `/dev/mapper/${STATE_MAPPING}`
      expect(calls.map((c) => c.argv)).to.deep.equal([
        ['cryptsetup', 'open', '--type', 'luks2', '--key-file', '-', '/dev/sdb', STATE_MAPPING],
        ...(fresh ? [['mkfs.ext4', '-q', '-L', 'constellation-state', mapped]] : []),
        ['mount', mapped, paths.stateDir],
        ...paths.stateDiskDirs.map((d) => [
          'mount',
          '--bind',
          path.join(paths.stateDir, 'persistent', d),
          path.join(paths.root, d),
        ]),
      ])
      expect(calls[0]?.input).to.deep.equal(key)
      expect(calls.flatMap((c) => c.argv).join(' ')).not.to.include(key.toString('hex'))
    })

  it('the real cryptsetup accepts its open arguments with the right key only, and mkfs.ext4 its mkfs arguments', async () => {
    const disk = await createLuksImage(dir)
    const { calls, runner } = recordingRunner()
    await deviceMapperMounter(runner, nodePaths(path.join(dir, 'root'))).mount(disk.image, disk.initialKey, {
      fresh: true,
    })
    const real = createRunner()
    const [open, mkfs] = calls.map((c) => c.argv)
    // the same arguments with --test-passphrase: everything but the mapping itself
    const testOpen = ['open', '--test-passphrase', ...open!.slice(2)]
    await real.run('cryptsetup', testOpen, { input: disk.initialKey })
    await expect(real.run('cryptsetup', testOpen, { input: randomBytes(32) })).to.be.rejectedWith(
      /No key available/,
    )
    const image = await createBlankImage(path.join(dir, 'root'))
    await real.run('mkfs.ext4', [...mkfs!.slice(1, -1), image])
  })
})
