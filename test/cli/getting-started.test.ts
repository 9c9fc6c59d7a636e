/**
 * What a new user types after the README's first command: `npm run -s constellation -- …` from
 * their own folder, and `constellation …` as the CLI prints it. Both must work as typed.
 */
import { execFile } from 'node:child_process'
import { access, mkdir, readlink, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { commandForUser } from '../../src/lib/ui/index.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const run = promisify(execFile)
const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  )

describe('getting at the CLI after ./scripts/setup.sh', function () {
  this.timeout(60_000)
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => tmp.cleanup())

  it('`npm run -s constellation -- … -C ws` resolves ws against the folder it was typed in', async () => {
    const ws = `ws-${path.basename(tmp.dir)}`
    try {
      await run(
        'npm',
        ['--prefix', REPO_ROOT, 'run', '-s', 'constellation', '--', 'config', 'generate', 'qemu', '-C', ws],
        {
          cwd: tmp.dir,
        },
      )
      expect(
        await exists(path.join(tmp.dir, ws, 'constellation-conf.yaml')),
        'in the folder the user typed it in',
      ).to.be.true
      expect(await exists(path.join(REPO_ROOT, ws)), 'not in the checkout').to.be.false
    } finally {
      await rm(path.join(REPO_ROOT, ws), { recursive: true, force: true })
    }
  })

  it('scripts/link-cli.sh puts a `constellation` on PATH that runs this checkout from any folder', async () => {
    const home = path.join(tmp.dir, 'home')
    const bin = path.join(home, '.local/bin')
    await mkdir(bin, { recursive: true })
    const env = { ...process.env, HOME: home, PATH: `${bin}:/usr/bin:/bin`, INIT_CWD: '/' }
    const linked = await run('bash', [path.join(REPO_ROOT, 'scripts/link-cli.sh')], { env })
    expect(linked.stdout).to.contain(path.join(bin, 'constellation'))
    expect(await realpath(path.join(bin, 'constellation'))).to.equal(
      path.join(REPO_ROOT, 'scripts/with-tools.sh'),
    )

    const elsewhere = path.join(tmp.dir, 'elsewhere')
    await mkdir(elsewhere)
    // INIT_CWD from an npm script around it must not move a plain call somewhere else
    await run('constellation', ['config', 'generate', 'qemu', '-C', 'ws'], { cwd: elsewhere, env })
    expect(await exists(path.join(elsewhere, 'ws', 'constellation-conf.yaml'))).to.be.true
    const version = await run('constellation', ['--version'], { cwd: elsewhere, env })
    expect(version.stdout).to.match(/^constellation\/0\.1\.0 /)

    // run again: the link is ours, so it is replaced, not refused
    await run('bash', [path.join(REPO_ROOT, 'scripts/link-cli.sh')], { env })
    expect(await readlink(path.join(bin, 'constellation'))).to.equal(
      path.join(REPO_ROOT, 'scripts/with-tools.sh'),
    )
  })

  it('scripts/link-cli.sh leaves a `constellation` that is not a link of ours alone, and says so', async () => {
    const home = path.join(tmp.dir, 'home')
    const bin = path.join(home, '.local/bin')
    await mkdir(bin, { recursive: true })
    await writeFile(path.join(bin, 'constellation'), '#!/bin/sh\necho theirs\n', { mode: 0o755 })
    const env = { ...process.env, HOME: home, PATH: `${bin}:/usr/bin:/bin` }
    const res = await run('bash', [path.join(REPO_ROOT, 'scripts/link-cli.sh')], { env })
    expect(res.stdout + res.stderr).to.contain(
      `${path.join(bin, 'constellation')} is not a link to a checkout`,
    )
    expect((await run('constellation', [], { env })).stdout).to.equal('theirs\n')
  })
})

describe('commandForUser: the commands the CLI prints work as printed', () => {
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => tmp.cleanup())

  it('`constellation` when the one on PATH runs this package', async () => {
    await symlink(path.join(REPO_ROOT, 'scripts/with-tools.sh'), path.join(tmp.dir, 'constellation'))
    expect(await commandForUser({ PATH: `/nonexistent:${tmp.dir}` }, REPO_ROOT)).to.equal('constellation')
  })

  it("this package's wrapper, by its full path, when none is on PATH", async () => {
    expect(await commandForUser({ PATH: '/usr/bin:/bin' }, REPO_ROOT)).to.equal(
      path.join(REPO_ROOT, 'scripts/with-tools.sh'),
    )
  })

  it('the full path when the `constellation` on PATH is another install', async () => {
    await writeFile(path.join(tmp.dir, 'constellation'), '#!/bin/sh\n', { mode: 0o755 })
    expect(await commandForUser({ PATH: tmp.dir }, REPO_ROOT)).to.equal(
      path.join(REPO_ROOT, 'scripts/with-tools.sh'),
    )
  })

  it('quotes a path a shell would split', async () => {
    const root = path.join(tmp.dir, 'my checkout')
    await mkdir(path.join(root, 'scripts'), { recursive: true })
    await writeFile(path.join(root, 'scripts/with-tools.sh'), '')
    expect(await commandForUser({ PATH: '/usr/bin' }, root)).to.equal(`'${root}/scripts/with-tools.sh'`)
  })
})
