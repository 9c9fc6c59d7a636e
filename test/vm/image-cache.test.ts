/**
 * The image cache: its key moves with every input byte (a project change means a new image), the
 * Debian base's only with the package list; `--prune` keeps the current image and base alone.
 */
import { execFileSync } from 'node:child_process'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import {
  baseInputsHash,
  imageInputsHash,
  INITRAMFS_MODULES,
  INITRAMFS_SETUP_HOOK,
  MMDEBSTRAP_OPTIONS,
  PROJECT_FILES,
} from '../../src/lib/vm/image-recipe.js'
import { ensureImage, pruneImages, staleImages, type ImageManifest } from '../../src/lib/vm/image.js'
import { CommandFailedError, type Runner } from '../../src/lib/system/index.js'

describe('vm: image cache', () => {
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(() => tmp.cleanup())

  async function fakePackage(dir: string) {
    for (const entry of PROJECT_FILES)
      if (entry.includes('.')) await writeFile(path.join(dir, entry), `${entry}\n`)
      else {
        await mkdir(path.join(dir, entry, 'sub'), { recursive: true })
        await writeFile(path.join(dir, entry, 'sub', 'a.js'), 'a\n')
      }
    await writeFile(path.join(dir, 'node'), 'node binary\n')
    return { packageDir: dir, nodeBinary: path.join(dir, 'node') }
  }

  it('keys the image by every input byte, and the base by the package list alone', async () => {
    const inputs = await fakePackage(tmp.dir)
    const first = await imageInputsHash(inputs)
    expect(await imageInputsHash(inputs)).to.equal(first)
    const base = baseInputsHash()
    await writeFile(path.join(tmp.dir, 'dist', 'sub', 'a.js'), 'b\n')
    expect(await imageInputsHash(inputs)).to.not.equal(first)
    await writeFile(path.join(tmp.dir, 'dist', 'sub', 'a.js'), 'a\n')
    await writeFile(inputs.nodeBinary, 'another node\n')
    expect(await imageInputsHash(inputs)).to.not.equal(first)
    expect(baseInputsHash()).to.equal(base)
  })

  it("sets the initramfs to the root disk's modules alone before any package installs (mmdebstrap's setup hook under sh)", async () => {
    expect(MMDEBSTRAP_OPTIONS).to.include(`--setup-hook=${INITRAMFS_SETUP_HOOK}`)
    // as mmdebstrap runs a hook with shell syntax in it: sh -c, the chroot as $1
    execFileSync('sh', ['-c', INITRAMFS_SETUP_HOOK, 'sh', tmp.dir])
    expect(
      await readFile(path.join(tmp.dir, 'etc/initramfs-tools/conf.d/constellation-vm'), 'utf8'),
    ).to.equal('MODULES=list\n')
    const modules = await readFile(
      path.join(tmp.dir, 'usr/share/initramfs-tools/modules.d/constellation-vm'),
      'utf8',
    )
    expect(modules.split('\n')).to.deep.equal([...INITRAMFS_MODULES, ''])
    expect(INITRAMFS_MODULES).to.include.members(['virtio_blk', 'ext4'])
  })

  it('refuses to hash a package without its build, saying so', async () => {
    await expect(imageInputsHash({ packageDir: tmp.dir, nodeBinary: '/bin/sh' })).to.be.rejectedWith(
      /image input .*bin is missing \(run `npm run build`\)/,
    )
  })

  it('prunes other images, other bases and interrupted builds, and keeps the current ones', async () => {
    const keep = { hash: '0123456789abcdef' } as ImageManifest
    const base = `base-${baseInputsHash()}.tar`
    for (const dir of [keep.hash, 'fedcba9876543210', '.build-x-1']) await mkdir(path.join(tmp.dir, dir))
    for (const file of [
      base,
      'base-1111111111111111.tar',
      'base-1111111111111111.tar.ab.partial',
      'notes.txt',
    ])
      await writeFile(path.join(tmp.dir, file), '')
    const listed = (await staleImages(tmp.dir, keep)).sort()
    expect((await readdir(tmp.dir)).length, 'listing the stale ones removes nothing').to.equal(7)
    const removed = await pruneImages(tmp.dir, keep)
    expect(removed.sort()).to.deep.equal(listed)
    expect(removed.map((f) => path.basename(f)).sort()).to.deep.equal([
      '.build-x-1',
      'base-1111111111111111.tar',
      'base-1111111111111111.tar.ab.partial',
      'fedcba9876543210',
    ])
    expect((await readdir(tmp.dir)).sort()).to.deep.equal([keep.hash, base, 'notes.txt'].sort())
  })

  it('Ctrl-C during mmdebstrap ends it in its own session and leaves no partial base or build', async () => {
    const inputs = await fakePackage(tmp.dir)
    const cacheDir = path.join(tmp.dir, 'cache')
    const stop = new AbortController()
    const calls: Array<{ file: string; ownSession?: boolean; signal?: AbortSignal }> = []
    // the runner boundary: mmdebstrap starts writing its tarball, then runs until it is signalled
    const runner: Runner = {
      run: async (file, args, opts) => {
        calls.push({ file, ownSession: opts?.ownSession, signal: opts?.signal })
        await writeFile(args.at(-2)!, 'half a tarball')
        stop.abort('SIGINT')
        throw new CommandFailedError({
          command: file,
          args,
          exitCode: null,
          stdout: '',
          stderr: '',
          timedOut: false,
        })
      },
    }
    await expect(
      ensureImage(
        {
          ...inputs,
          cacheDir,
          nodeVersion: 'v20',
          sourceDateEpoch: 0,
          progress: () => {},
          signal: stop.signal,
        },
        runner,
      ),
    ).to.be.rejectedWith(CommandFailedError)
    expect(calls).to.have.length(1)
    expect(calls[0]).to.include({ file: 'mmdebstrap', ownSession: true, signal: stop.signal })
    expect(await readdir(cacheDir), 'no partial base, no .build- folder').to.deep.equal([])
  })
})
