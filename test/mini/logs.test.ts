/**
 * `mini logs NODE [SERVICE] [-f]`: a node's service logs, from the files its processes write (see
 * layout.ts, nodeLogFiles). The cluster is a record and the log files of one: nothing boots.
 */
import { randomBytes } from 'node:crypto'
import { appendFile, mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { miniPaths, nodeLogFiles, writeMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

async function clusterWithLogs(ws: string): Promise<void> {
  const record: MiniRecord = {
    version: 1,
    startedAt: new Date().toISOString(),
    network: { mode: 'loopback', id: randomBytes(3).toString('hex'), prefix: '127.99.2' },
    createdFiles: [],
    createdWorkspace: true,
    nodes: [
      { name: 'control-plane-0', role: 'control-plane', index: 0, address: '127.99.2.2' },
      { name: 'worker-0', role: 'worker', index: 1, address: '127.99.2.3' },
    ],
  }
  await writeMiniRecord(ws, record)
  const cp = miniPaths(ws).node('control-plane-0')
  await mkdir(path.join(cp.unitState), { recursive: true })
  await writeFile(cp.log('bootstrap'), 'bootstrap line 1\nbootstrap line 2\n')
  await writeFile(cp.log('state-disk'), 'disk ready\n')
  await writeFile(path.join(cp.unitState, 'constellation-joinservice.service.log'), 'join service up\n')
  await mkdir(miniPaths(ws).node('worker-0').dir, { recursive: true })
}

describe('mini logs', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let ws: string
  beforeEach(async () => {
    tmp = await makeTempDir()
    ws = path.join(tmp.dir, 'ws')
    await clusterWithLogs(ws)
  })
  afterEach(async () => tmp.cleanup())

  it("nodeLogFiles lists a node's services and their files, sorted", async () => {
    const cp = miniPaths(ws).node('control-plane-0')
    expect(await nodeLogFiles(ws, 'control-plane-0')).to.deep.equal([
      { service: 'bootstrap', file: cp.log('bootstrap') },
      { service: 'joinservice', file: path.join(cp.unitState, 'constellation-joinservice.service.log') },
      { service: 'state-disk', file: cp.log('state-disk') },
    ])
    expect(await nodeLogFiles(ws, 'worker-0')).to.deep.equal([])
  })

  it("a node's every service, each line named by its service", async () => {
    const res = await runCli(['mini', 'logs', 'control-plane-0', '-C', ws])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.equal(
      [
        'bootstrap   | bootstrap line 1',
        'bootstrap   | bootstrap line 2',
        'joinservice | join service up',
        'state-disk  | disk ready',
        '',
      ].join('\n'),
    )
  })

  it('one service: its log as it is', async () => {
    const res = await runCli(['mini', 'logs', 'control-plane-0', 'joinservice', '-C', ws])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout).to.equal('join service up\n')
  })

  it('an unknown node or service: exit 1, naming the ones there are', async () => {
    const node = await runCli(['mini', 'logs', 'worker-9', '-C', ws])
    expect(node.code).to.equal(1)
    expect(node.stderr).to.contain('control-plane-0, worker-0')
    const service = await runCli(['mini', 'logs', 'control-plane-0', 'kubelet', '-C', ws])
    expect(service.code).to.equal(1)
    expect(service.stderr).to.contain('bootstrap, joinservice, state-disk')
  })

  it('-f follows what is appended, until Ctrl-C (130, nothing changed)', async () => {
    const run = spawnCli(['mini', 'logs', 'control-plane-0', 'bootstrap', '-f', '-C', ws])
    await eventually('the log so far', async () =>
      run.stdout().includes('bootstrap line 2') ? true : undefined,
    )
    await appendFile(miniPaths(ws).node('control-plane-0').log('bootstrap'), 'bootstrap line 3\n')
    await eventually('the new line', async () =>
      run.stdout().includes('bootstrap line 3') ? true : undefined,
    )
    run.child.kill('SIGINT')
    const res = await run.result
    expect(res.code).to.equal(130)
    expect(res.stderr).to.contain('mini logs interrupted: nothing was changed')
  })
})
