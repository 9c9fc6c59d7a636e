/**
 * The parts `mini up` and `mini down` stand on: the cluster network (real network namespaces,
 * a bridge and veth pairs; CI runs as root), processes found and stopped by their environment
 * marker (real processes), and the record `mini down` works from.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { bootContext, type MiniIo } from '../../src/lib/mini/cluster.js'
import { markedProcesses, startDaemon, stopMarked, alive } from '../../src/lib/mini/daemons.js'
import { miniPaths, readMiniRecord, writeMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import {
  bridgeMac,
  chooseNetwork,
  miniNetwork,
  removeNetwork,
  removeNodeNetwork,
} from '../../src/lib/mini/network.js'
import { createRunner, type Runner } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const runner = createRunner()

describe('mini: the cluster network', function () {
  this.timeout(30_000)

  it('chooses a random /24 that no interface of this host has', async () => {
    const used: Runner = {
      run: () =>
        Promise.resolve({
          stdout: '2: eth0    inet 10.100.0.5/24 brd 10.100.0.255 scope global eth0\n',
          stderr: '',
        }),
    }
    // the first two draws give 10.100.0 (taken), the next ones another /24
    const draws = [0.5, 0, 0, 0.2, 0.3]
    const record = await chooseNetwork('netns', used, () => draws.shift() ?? 0.7)
    expect(record.mode).to.equal('netns')
    expect(record.id).to.match(/^[0-9a-f]{6}$/)
    expect(record.prefix).to.match(/^10\.\d+\.\d+$/)
    expect(record.prefix).to.not.equal('10.100.0')
    const loopback = await chooseNetwork('loopback', used)
    expect(loopback.prefix).to.match(/^127\.\d+\.\d+$/)
    const net = miniNetwork(loopback, used)
    expect([net.hostAddress, net.nodeAddress(0), net.nodeAddress(3)]).to.deep.equal(
      ['.1', '.2', '.5'].map((s) => loopback.prefix + s),
    )
    expect(net.execPrefix(0)).to.deep.equal([])
    await expect(net.setLink(0, false)).to.be.rejectedWith(/needs network namespaces/)
  })

  it('namespaces joined by a bridge: nodes reach the host and each other, a link can be cut, all of it removed', async () => {
    expect(process.getuid?.(), 'network namespaces need root (CI runs as root)').to.equal(0)
    const record = await chooseNetwork('netns', runner)
    const net = miniNetwork(record, runner)
    try {
      const bridgeAddress = async () =>
        (await runner.run('ip', ['-o', 'link', 'show', `cst${record.id}br`])).stdout.match(
          /link\/ether (\S+)/,
        )?.[1]
      await net.addNode(0)
      // a node added later must not move the bridge's address under the others' ARP caches
      expect(await bridgeAddress()).to.equal(bridgeMac(record.id))
      await net.addNode(1)
      expect(await bridgeAddress(), 'after a second port').to.equal(bridgeMac(record.id))
      // a TCP server in node 1's namespace, reached from node 0's namespace and from the host
      const serve = `require('net').createServer((s) => s.end('hi')).listen(7000, '${net.nodeAddress(1)}', () => console.log('up'))`
      const server = startDaemon({
        argv: [...net.execPrefix(1), process.execPath, '-e', serve],
        env: { ...process.env, MINI_TEST_MARK: record.id },
        logFile: '/dev/null',
      })
      const dial = (prefix: string[]) =>
        runner.run(prefix[0] ?? process.execPath, [
          ...prefix.slice(1),
          ...(prefix.length ? [process.execPath] : []),
          '-e',
          `const s=require('net').connect(7000,'${net.nodeAddress(1)}');s.on('data',(d)=>{process.stdout.write(d);process.exit(0)});s.on('error',(e)=>{console.error(e.message);process.exit(3)});setTimeout(()=>process.exit(4),3000)`,
        ])
      let reached = ''
      for (let i = 0; i < 50 && reached !== 'hi'; i++)
        reached = await dial([]).then(
          (r) => r.stdout,
          () => new Promise<string>((r) => setTimeout(() => r(''), 100)),
        )
      expect(reached, 'host → node 1').to.equal('hi')
      expect((await dial(net.execPrefix(0))).stdout, 'node 0 → node 1').to.equal('hi')
      await net.setLink(1, false)
      await expect(dial(net.execPrefix(0)), 'a cut link').to.be.rejected
      await net.setLink(1, true)
      let healed = ''
      for (let i = 0; i < 50 && healed !== 'hi'; i++)
        healed = await dial(net.execPrefix(0)).then(
          (r) => r.stdout,
          () => '',
        )
      expect(healed, 'the link plugged back').to.equal('hi')
      await stopMarked('MINI_TEST_MARK', record.id)
      expect(alive(server.pid)).to.equal(false)
      // `mini remove`: node 1's namespace and link go, node 0's stay
      expect(await removeNodeNetwork(record, 1, runner)).to.deep.equal([
        `link cst${record.id}h1`,
        `network namespace cst-${record.id}-1`,
      ])
      expect(await removeNodeNetwork(record, 1, runner), 'twice: nothing left').to.deep.equal([])
      expect((await runner.run('ip', ['netns', 'list'])).stdout).to.include(`cst-${record.id}-0`)
    } finally {
      await stopMarked('MINI_TEST_MARK', record.id)
      const removed = await removeNetwork(record, runner)
      expect(removed).to.include(`bridge cst${record.id}br`)
      await removeNetwork(record, runner) // twice: nothing left, no error
    }
    expect((await runner.run('ip', ['netns', 'list'])).stdout).to.not.include(`cst-${record.id}-`)
    expect((await runner.run('ip', ['-o', 'link'])).stdout).to.not.include(`cst${record.id}`)
  })
})

describe('mini: processes found by their marker', function () {
  this.timeout(30_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir('constell-mini-')))
  afterEach(() => cleanup())

  it('finds the marked processes (and what they started), not another value with the same prefix, and stops them all', async () => {
    const mark = `t${process.pid}x${Date.now()}`
    const env = (value: string) => ({ ...process.env, MINI_TEST_MARK: value })
    const log = path.join(dir, 'log')
    // a shell that starts a grandchild: both inherit the marker
    const parent = startDaemon({
      argv: ['/bin/sh', '-c', 'sleep 30 & sleep 30'],
      env: env(mark),
      logFile: log,
    })
    const other = startDaemon({ argv: ['sleep', '30'], env: env(`${mark}2`), logFile: log })
    try {
      let found: number[] = []
      for (let i = 0; i < 50 && found.length < 3; i++) {
        found = await markedProcesses('MINI_TEST_MARK', mark)
        await new Promise((r) => setTimeout(r, 20))
      }
      expect(found).to.include(parent.pid)
      expect(found).to.have.length(3) // sh and its two sleeps
      expect(found).to.not.include(other.pid)
      expect(await stopMarked('MINI_TEST_MARK', mark, 2_000)).to.equal(3)
      expect(await markedProcesses('MINI_TEST_MARK', mark)).to.deep.equal([])
      expect(await parent.exited).to.equal(null)
      expect(alive(other.pid)).to.equal(true)
    } finally {
      await stopMarked('MINI_TEST_MARK', `${mark}2`, 2_000)
    }
  })
})

describe("mini: a node's environment", () => {
  it("keeps the operator's variables but not the operator's extra trusted CAs", () => {
    const operator = {
      PATH: '/usr/bin',
      HOME: '/root',
      NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca.crt',
      LANG: 'C',
    }
    const record = {
      network: { mode: 'loopback', id: 'abc123', prefix: '127.9.9' },
      nodes: [],
    } as unknown as MiniRecord
    const io = { runner, env: operator, files: { systemctlFakeDir: '/fake/systemctl' } } as unknown as MiniIo
    const { env } = bootContext(record, miniPaths('/ws'), io)
    expect(env).to.not.have.property('NODE_EXTRA_CA_CERTS')
    expect(env).to.include({
      HOME: '/root',
      LANG: 'C',
      PATH: '/fake/systemctl:/usr/bin',
      CONSTELL_MINI_CLUSTER: 'abc123',
    })
    expect(operator.NODE_EXTRA_CA_CERTS, "the operator's own environment is left as it is").to.equal(
      '/etc/ssl/certs/ca.crt',
    )
  })
})

describe('mini: the record mini down works from', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir('constell-mini-')))
  afterEach(() => cleanup())

  it('is absent, written 0600 and read back, or refused naming the file', async () => {
    expect(await readMiniRecord(dir)).to.equal(undefined)
    const record: MiniRecord = {
      version: 1,
      startedAt: '2026-11-25T00:00:00.000Z',
      network: { mode: 'loopback', id: 'abc123', prefix: '127.1.2' },
      createdFiles: [],
      createdWorkspace: false,
      nodes: [{ name: 'control-plane-0', role: 'control-plane', index: 0, address: '127.1.2.2' }],
    }
    await writeMiniRecord(dir, record)
    expect(await readMiniRecord(dir)).to.deep.equal(record)
    const file = miniPaths(dir).record
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
    await writeFile(file, '{"version": 2}')
    await expect(readMiniRecord(dir)).to.be.rejectedWith(`${file} is not a mini cluster record`)
    await mkdir(path.dirname(file), { recursive: true })
    expect(JSON.parse(await readFile(file, 'utf8'))).to.deep.equal({ version: 2 }) // left as it was
  })
})
