/**
 * docs/init.md's "By hand" block, run as written (ports swapped for free ones, CHECKOUT for this
 * checkout, `constellation` on PATH as scripts/link-cli.sh leaves it): a reader who types it gets
 * an initialized node, not an error three lines in.
 */
import { spawn } from 'node:child_process'
import { access, mkdir, readdir, readFile, symlink } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { freePort } from '../support/ports.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

/** The first sh block after "By hand" in docs/init.md. */
async function byHandBlock(): Promise<string> {
  const doc = await readFile(path.join(REPO_ROOT, 'docs/init.md'), 'utf8')
  const from = doc.indexOf('By hand')
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(from))
  if (from < 0 || !block?.[1]) throw new Error('docs/init.md has no "By hand" sh block')
  return block[1]
}

/** Processes whose command line names `dir` (the swtpm the block starts), ended by pid. */
async function killUnder(dir: string): Promise<void> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(dir)) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {
        // gone already
      }
    }
  }
}

describe('docs/init.md, by hand', function () {
  this.timeout(120_000)
  let tmp: TempDir
  let group: number | undefined
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => {
    // the block's own processes (a hung init too), then the swtpm it daemonized
    if (group) {
      try {
        process.kill(-group, 'SIGKILL')
      } catch {
        // the group has ended
      }
    }
    await killUnder(tmp.dir)
    await tmp.cleanup()
  })

  it('the block initializes a node as written', async () => {
    const [tpm, ctrl, init] = [await freePort(), await freePort(), await freePort()]
    const script = (await byHandBlock())
      .replace(/^CHECKOUT=.*$/m, `CHECKOUT=${REPO_ROOT}`)
      .replaceAll('2321', String(tpm))
      .replaceAll('2322', String(ctrl))
      .replaceAll('127.0.0.1:9000', `127.0.0.1:${init}`)
    const bin = path.join(tmp.dir, 'bin')
    const work = path.join(tmp.dir, 'node')
    await mkdir(bin)
    await mkdir(work)
    await symlink(path.join(REPO_ROOT, 'scripts/with-tools.sh'), path.join(bin, 'constellation'))
    const child = spawn('bash', ['-c', script], {
      cwd: work,
      detached: true,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, CONSTELL_NO_SPINNER: '1' },
    })
    group = child.pid
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(output, output).to.contain('Your Constellation cluster was successfully initialized.')
    expect(code, output).to.equal(0)
    await access(path.join(work, 'ws/constellation-admin.conf'))
    expect(await readFile(path.join(work, 'ws/constellation-state.yaml'), 'utf8')).to.match(
      /clusterID: [0-9a-f]{64}/,
    )
  })
})
