/**
 * `mini down` keeps the master secret unless --purge, and says where it is; `mini up` then refuses
 * that folder with a sentence that says why. The cluster is a record of a cluster whose processes
 * are gone already (what `mini down` works from after a crash): no node needs to boot for this.
 */
import { execFileSync, spawn } from 'node:child_process'
import { access, mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { alive } from '../../src/lib/mini/daemons.js'
import { miniPaths, writeMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  )

/** A workspace as `mini up` leaves it: its files, its folder, and the record. */
async function leftByMiniUp(ws: string): Promise<void> {
  await mkdir(ws, { recursive: true })
  const files = workspacePaths(ws)
  for (const file of [files.config, files.state, files.masterSecret, files.adminConf])
    await writeFile(file, 'x\n', { mode: 0o600 })
  const record: MiniRecord = {
    version: 1,
    startedAt: new Date().toISOString(),
    network: { mode: 'loopback', id: randomBytes(3).toString('hex'), prefix: '127.99.1' },
    createdFiles: [files.config, files.state, files.masterSecret, files.adminConf],
    createdWorkspace: true,
    nodes: [],
  }
  await writeMiniRecord(ws, record)
}

describe('mini down: the master secret stays unless --purge', function () {
  this.timeout(60_000)
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => tmp.cleanup())

  it('keeps it, says where and why, and removes the rest', async () => {
    const ws = path.join(tmp.dir, 'ws')
    await leftByMiniUp(ws)
    const secret = workspacePaths(ws).masterSecret
    const res = await runCli(['mini', 'down', '-C', ws])
    expect(res.code, res.stderr).to.equal(0)
    expect(await readdir(ws)).to.deep.equal(['constellation-mastersecret.json'])
    expect(res.stdout).to.contain(`Kept ${secret}: the cluster's master secret`)
    expect(res.stdout).to.contain('--purge')

    const json = await runCli(['mini', 'down', '-C', ws, '--json'])
    expect(json.code, 'no cluster left to remove').to.equal(1)

    // the folder now holds a master secret: a new cluster there is refused, and told why
    const up = await runCli(['mini', 'up', '-C', ws, '--skip-helm'])
    expect(up.code).to.equal(1)
    expect(up.stderr).to.contain(`${secret} already exists`)
    expect(up.stderr).to.match(/mini down.*keeps/)
    expect(await readdir(ws)).to.deep.equal(['constellation-mastersecret.json'])
  })

  it('--json names the kept file', async () => {
    const ws = path.join(tmp.dir, 'ws')
    await leftByMiniUp(ws)
    const res = await runCli(['mini', 'down', '-C', ws, '--json'])
    expect(res.code, res.stderr).to.equal(0)
    const out = JSON.parse(res.stdout) as { kept: string[]; removed: string[] }
    expect(out.kept).to.deep.equal([workspacePaths(ws).masterSecret])
    expect(out.removed).to.not.include(workspacePaths(ws).masterSecret)
  })

  it('--purge removes it too, and the folder mini up made', async () => {
    const ws = path.join(tmp.dir, 'ws')
    await leftByMiniUp(ws)
    const res = await runCli(['mini', 'down', '-C', ws, '--purge'])
    expect(res.code, res.stderr).to.equal(0)
    expect(await exists(ws)).to.be.false
    expect(res.stdout).to.contain(workspacePaths(ws).masterSecret)
    expect(res.stdout).to.not.contain('Kept')
  })
})

describe('mini down: a workspace deleted while its cluster runs', function () {
  this.timeout(60_000)
  let tmp: TempDir
  const started: number[] = []
  const namespaces: string[] = []
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => {
    for (const pid of started.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL')
    for (const ns of namespaces.splice(0)) execFileSync('ip', ['netns', 'delete', ns], { stdio: 'ignore' })
    await tmp.cleanup()
  })

  /**
   * A process as the cluster's are: its marker in the environment, the cluster's folder on its
   * command line, and (as a node's supervisor writes boot.json) its state written when it stops.
   */
  function clusterProcess(ws: string, id: string): number {
    const stateDir = path.join(miniPaths(ws).dir, 'nodes/worker-0/systemd')
    const script = `process.on('SIGTERM', () => {
        require('node:fs').mkdirSync(process.argv[1], { recursive: true })
        require('node:fs').writeFileSync(process.argv[1] + '/boot.json', '{}')
        process.exit(0)
      })
      setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ['-e', script, stateDir], {
      env: { ...process.env, CONSTELL_MINI_CLUSTER: id },
      stdio: 'ignore',
      detached: true,
    })
    child.unref()
    started.push(child.pid!)
    return child.pid!
  }

  it('stops its processes (and, as root, removes its namespaces) by what they still name, and says what stays', async () => {
    const ws = path.join(tmp.dir, 'ws')
    const other = path.join(tmp.dir, 'other')
    const [id, otherId] = [randomBytes(3).toString('hex'), randomBytes(3).toString('hex')]
    const pid = clusterProcess(ws, id)
    const bystander = clusterProcess(other, otherId)
    const asRoot = process.getuid?.() === 0
    if (asRoot) {
      execFileSync('ip', ['netns', 'add', `cst-${id}-0`])
      namespaces.push(`cst-${id}-0`)
    }
    await rm(ws, { recursive: true, force: true }) // never made here: as after `rm -rf ws`

    const res = await runCli(['mini', 'down', '-C', ws])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.contain('Stopped 1 processes')
    expect(res.stderr).to.contain(`${ws} was deleted while its cluster ran`)
    expect(alive(pid), 'the cluster process').to.equal(false)
    expect(await exists(ws), 'what the stopping processes wrote is removed too').to.equal(false)
    expect(alive(bystander), "another cluster's process").to.equal(true)
    if (asRoot) {
      expect(res.stdout).to.contain(`network namespace cst-${id}-0`)
      expect(execFileSync('ip', ['netns', 'list']).toString()).to.not.contain(`cst-${id}-0`)
      namespaces.length = 0
    }

    const again = await runCli(['mini', 'down', '-C', ws])
    expect(again.code, 'nothing left: as for any folder without a cluster').to.equal(1)
    expect(again.stderr).to.contain(`no mini cluster in ${ws}`)
  })
})
