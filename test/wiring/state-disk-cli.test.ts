/**
 * `constellation state-disk setup` as systemd runs it (the CLI process, production wiring): real
 * cryptsetup, blkid and swtpm. These machines have no device-mapper, so the production mount step
 * fails here, after the header work is done; the test shows that it gets that far and says why it
 * stops. The steps beyond are tested with the mount double (test/bootstrapper/state-disk/state-disk-setup.test.ts,
 * test/e2e/node-lifecycle.test.ts).
 */
import { readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { nodePaths } from '../../src/lib/paths.js'
import { CryptsetupDisk } from '../../src/lib/statedisk/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { createBlankImage, TEST_PBKDF } from '../support/luks-image.js'
import { freePort } from '../support/ports.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { makeTempDir } from '../support/temp.js'

describe('state-disk setup (CLI process, production wiring)', function () {
  this.timeout(60_000)
  let dir: string
  let cleanup: () => Promise<void>
  let tpm: SwtpmHandle
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    tpm = await startSwtpm()
  })
  afterEach(async () => {
    await tpm.stop()
    await cleanup()
  })

  async function configFor(device: string, extra: Record<string, unknown> = {}): Promise<string> {
    const file = path.join(dir, 'node-config.yaml')
    await writeFile(
      file,
      stringifyYaml({
        attestationVariant: 'qemu-vtpm',
        tpm: { swtpm: tpm.endpoint },
        root: path.join(dir, 'root'),
        stateDisk: { device, pbkdf: TEST_PBKDF },
        metadata: {
          provider: 'static',
          self: { name: 'w-0', role: 'worker', vpcIP: '127.0.0.1' },
          peers: [],
        },
        recoveryServer: { listen: `127.0.0.1:${await freePort()}` },
        ...extra,
      }),
    )
    return file
  }

  it('a blank disk is formatted as Constellation does, with dm-integrity, which needs device-mapper, and says so; the disk stays blank', async () => {
    const image = await createBlankImage(dir)
    const run = await runCli(['state-disk', 'setup', '--config', await configFor(image)])
    expect(run.code).to.equal(1)
    expect(run.stderr).to.match(/cryptsetup luksFormat .*--integrity hmac-sha256 .*--key-file - /)
    expect(run.stderr).to.include('Cannot format integrity for device')
    // the next boot finds it blank and tries again; mini formats without integrity (--simulate-mapping)
    const disk = new CryptsetupDisk(image, createRunner(), dir)
    expect(await disk.probe()).to.deep.equal({ kind: 'blank' })
    const keyFile = nodePaths(path.join(dir, 'root')).stateDiskInitialKeyFile
    expect((await stat(keyFile)).mode & 0o777).to.equal(0o600)
    expect(run.stderr).not.to.include((await readFile(keyFile)).toString('base64'))
  })

  it('a disk with a file system is refused and left as it was', async () => {
    const image = await createBlankImage(dir)
    await createRunner().run('mkfs.ext4', ['-q', image])
    const before = await readFile(image)
    const run = await runCli(['state-disk', 'setup', '--config', await configFor(image)])
    expect(run.code).to.equal(1)
    expect(run.stderr).to.include(
      `the state disk ${image} is not empty (blkid finds ext4); refusing to format it`,
    )
    expect(run.stderr).to.include('wipefs --all')
    expect((await readFile(image)).equals(before)).to.equal(true)
  })

  it('a node config without a state disk names the key', async () => {
    const file = await configFor('/dev/null')
    await writeFile(file, (await readFile(file, 'utf8')).replace(/stateDisk:[\s\S]*?(?=metadata:)/, ''))
    const run = await runCli(['state-disk', 'setup', '--config', file])
    expect(run.code).to.equal(1)
    expect(run.stderr).to.match(/stateDisk: required key is missing/)
  })
})
