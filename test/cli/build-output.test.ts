/**
 * `npm run build` (and so `npm run mini`) prints no "oclif update available" warning: the oclif dev tool
 * checks npm for a newer version of itself and says so on stderr. The build runs in a copy of the
 * sources, so the checkout's dist/ and manifest are never touched; a planted version cache makes
 * the tool believe a newer version exists, with no network involved. And dist/ is readable by all.
 */
import { spawn } from 'node:child_process'
import { cp, mkdir, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

describe('build output', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> }
  before(async () => (tmp = await makeTempDir()))
  after(async () => tmp.cleanup())

  it('has no oclif update warning even when a newer oclif is known', async function () {
    this.timeout(120_000)
    const repo = path.join(tmp.dir, 'repo')
    // simulator/: the API fake's storage layout (api-layout.js) is bundled from there
    for (const entry of ['package.json', 'tsconfig.json', 'scripts', 'src', 'bin', 'simulator'])
      await cp(path.join(REPO_ROOT, entry), path.join(repo, entry), { recursive: true })
    await symlink(path.join(REPO_ROOT, 'node_modules'), path.join(repo, 'node_modules'))
    const cache = path.join(tmp.dir, 'cache')
    await mkdir(path.join(cache, 'oclif'), { recursive: true })
    await writeFile(path.join(cache, 'oclif', 'version'), JSON.stringify({ latest: '99.0.0' }))

    const res = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn('bash', ['scripts/build.sh'], {
        cwd: repo,
        env: { ...process.env, XDG_CACHE_HOME: cache },
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
      child.on('error', reject)
      child.on('close', (code) => resolve({ code, stderr }))
    })
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stderr).to.not.match(/update available/i)
    // readable by every user: a CLI installed from a checkout runs as whoever calls it
    expect((await stat(path.join(repo, 'dist'))).mode & 0o777).to.equal(0o755)
  })
})
