/**
 * The production luksFormat argv against the real cryptsetup. This host has no device-mapper, so a
 * format with dm-integrity cannot complete here; instead each case runs the real binary on an image
 * and asserts where it stopped: the production argv passes option parsing and every value check and
 * fails only at creating the dm-integrity device, while a wrong option or value fails earlier and in
 * other words. The format without integrity (mini, tests) completes and is read back.
 */
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { spyingRunner } from '../support/runner.js'
import { createBlankImage, TEST_PBKDF } from '../support/luks-image.js'
import { CryptsetupDisk, luksFormatArgs, PRODUCTION_STATE_DISK_FORMAT } from '../../src/lib/statedisk/luks.js'
import { createRunner } from '../../src/lib/system/index.js'

/** The device-mapper step, the first thing cryptsetup cannot do here. */
const DM_STEP = 'Cannot format integrity for device'

describe('state disk format as Constellation formats it (real cryptsetup)', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  let image: string
  let keyFile: string
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    image = await createBlankImage(dir)
    keyFile = path.join(dir, 'key')
    await writeFile(keyFile, randomBytes(32), { mode: 0o600 })
  })
  afterEach(() => cleanup())

  /** Runs cryptsetup with `args` on the image and returns how it ended. */
  const cryptsetup = async (args: readonly string[]) =>
    createRunner()
      .run('cryptsetup', [...args, '--debug', '--key-file', keyFile, image])
      .then(
        (r) => ({ ok: true, out: r.stdout + r.stderr }),
        (e: { stdout?: string; stderr?: string }) => ({
          ok: false,
          out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
        }),
      )

  it("the production argv holds Constellation's flags", () => {
    expect(luksFormatArgs(PRODUCTION_STATE_DISK_FORMAT).join(' ')).to.equal(
      'luksFormat --type luks2 --batch-mode --cipher aes-xts-plain64 --key-size 512 --hash sha256 ' +
        '--sector-size 4096 --integrity hmac-sha256 ' +
        '--pbkdf argon2id --iter-time 2000 --pbkdf-memory 65536 --pbkdf-parallel 4',
    )
  })

  it('CryptsetupDisk formats with that argv when integrity is on, and it fails only at device-mapper', async () => {
    const seen: string[][] = []
    const disk = new CryptsetupDisk(
      image,
      spyingRunner((_f, a) => void seen.push([...a])),
      dir,
      undefined,
      true,
    )
    await expect(disk.format(randomBytes(32))).to.be.rejectedWith(DM_STEP)
    expect(seen[0]?.slice(0, -3)).to.deep.equal(luksFormatArgs(PRODUCTION_STATE_DISK_FORMAT))
    expect(disk.formatting).to.deep.equal({ integrity: true })
  })

  it('cryptsetup accepts every production option and value; what it did before the device-mapper step shows them in effect', async () => {
    const got = await cryptsetup(luksFormatArgs(PRODUCTION_STATE_DISK_FORMAT))
    expect(got.ok).to.equal(false)
    expect(got.out).to.include(DM_STEP)
    expect(got.out).not.to.match(/unknown option|Usage:/)
    // cryptsetup caps the threads at the CPUs it finds, so only the rest is asserted
    expect(got.out).to.match(
      /PBKDF argon2id, time_ms 2000 \(iterations 0\), max_memory_kb 65536, parallel_threads \d+/,
    )
    expect(got.out).to.include('Checking if cipher aes-xts-plain64 is usable')
    // 512 bits of AES-XTS plus the 256-bit HMAC key: Constellation's 64 + 32 byte volume key
    expect(got.out).to.include('(for 768-bits key)')
    expect(got.out).to.match(/Trying to format INTEGRITY device on top of .*, tag size 32\./)
    // no header is left behind: the next boot finds the disk blank and formats it again
    expect(await new CryptsetupDisk(image, createRunner(), dir).probe()).to.deep.equal({ kind: 'blank' })
  })

  const wrong: Record<string, { args: string[]; says: RegExp }> = {
    'an unknown option': { args: ['--integrity-hmac', 'sha256'], says: /--integrity-hmac: unknown option/ },
    'an unknown integrity algorithm': {
      args: ['--integrity', 'hmac-sha257'],
      says: /No known integrity specification pattern detected/,
    },
    'a sector size that is no power of two': {
      args: ['--sector-size', '4095'],
      says: /Unsupported encryption sector size/,
    },
  }
  for (const [name, tc] of Object.entries(wrong))
    it(`a deliberately wrong argv (${name}) fails before the device-mapper step, in other words`, async () => {
      const base = luksFormatArgs(PRODUCTION_STATE_DISK_FORMAT)
      const flag = tc.args[0]!
      const at = base.indexOf(flag)
      const args = at >= 0 ? [...base.slice(0, at), ...tc.args, ...base.slice(at + 2)] : [...base, ...tc.args]
      const got = await cryptsetup(args)
      expect(got.ok).to.equal(false)
      expect(got.out).to.match(tc.says)
      expect(got.out).not.to.include(DM_STEP)
    })

  it('without integrity (mini, tests) the format completes: AES-XTS-512, 4096-byte sectors, no integrity', async () => {
    const disk = new CryptsetupDisk(image, createRunner(), dir, TEST_PBKDF)
    expect(disk.formatting).to.deep.equal({ integrity: false, pbkdf: TEST_PBKDF })
    const key = randomBytes(32)
    await disk.format(key)
    expect(await disk.opensWith(key)).to.equal(true)
    const { stdout } = await createRunner().run('cryptsetup', ['luksDump', '--dump-json-metadata', image])
    const meta = JSON.parse(stdout) as {
      segments: Record<string, { encryption: string; sector_size: number; integrity?: unknown }>
      keyslots: Record<string, { key_size: number; kdf: { type: string } }>
    }
    const segment = meta.segments['0']
    expect(segment).to.include({ encryption: 'aes-xts-plain64', sector_size: 4096 })
    expect(segment?.integrity).to.equal(undefined)
    expect(meta.keyslots['0']).to.deep.include({ key_size: 64 })
    expect(meta.keyslots['0']?.kdf.type).to.equal('pbkdf2')
  })
})
