/**
 * dist/mini-simulator.js: the API contract fake as the process `mini` runs (the bundle,
 * as the package ships it; `npm test` builds first).
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node'
import { spawn } from 'node:child_process'
import { readdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { REPO_ROOT } from '../support/cli.js'
import { freePort, ownLoopback } from '../support/ports.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { simulatorPaths } from '../../src/lib/simulator/index.js'

const ENTRY = simulatorPaths(REPO_ROOT).apiEntry

interface Run {
  /** Resolves with the first stdout line. */
  firstLine: Promise<string>
  stderr: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill: (signal: NodeJS.Signals) => void
}

function run(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, [ENTRY, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  })
  let out = ''
  let err = ''
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')))
    })
    child.once('exit', () => reject(new Error(`exited before a line; stderr: ${err}`)))
  })
  firstLine.catch(() => {}) // a test that expects the exit need not wait for a line
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return { firstLine, stderr: () => err, exited, kill: (s) => child.kill(s) }
}

describe('mini-simulator (the API contract fake as a process)', () => {
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(() => tmp.cleanup())

  it('simulatorPaths points at files the package ships', async () => {
    const paths = simulatorPaths(REPO_ROOT)
    for (const file of [paths.kubeadmFake, paths.kubeletUnit, paths.apiEntry])
      expect((await stat(file)).isFile(), file).to.equal(true)
    expect((await stat(path.join(paths.systemctlFakeDir, 'systemctl'))).mode & 0o111).to.not.equal(0)
    expect((await stat(paths.kubeadmFake)).mode & 0o111).to.not.equal(0)
    // the unit's /usr/bin/kubelet: the stand-in beside it
    expect((await stat(path.join(path.dirname(paths.kubeletUnit), 'kubelet'))).mode & 0o111).to.not.equal(0)
  })

  for (const [what, args] of [
    ['no arguments', []],
    ['no --kubeconfig', ['--dir', '/tmp/x']],
    ['an unknown flag', ['--dir', '/tmp/x', '--kubeconfig', '/tmp/y', '--port', '1']],
    ['a positional argument', ['--dir', '/tmp/x', '--kubeconfig', '/tmp/y', 'extra']],
    ['--listen without a port', ['--dir', '/tmp/x', '--kubeconfig', '/tmp/y', '--listen', '127.0.0.1']],
    [
      'a grace period that is no duration',
      ['--dir', '/tmp/x', '--kubeconfig', '/tmp/y', '--node-monitor-grace-period', 'soon'],
    ],
  ] as const)
    it(`exits 2 with the usage on stderr for ${what}`, async () => {
      const r = run([...args])
      expect((await r.exited).code).to.equal(2)
      expect(r.stderr()).to.match(/^mini-simulator: .+\nusage: node mini-simulator\.js --dir STORAGE_DIR/)
    })

  it('serves with files in --dir, writes a 0600 kubeconfig for --listen, and exits 0 on SIGTERM', async () => {
    const host = ownLoopback()
    const port = await freePort()
    const dir = path.join(tmp.dir, 'api')
    const kubeconfig = path.join(tmp.dir, 'admin.conf')
    await writeFile(kubeconfig, 'old', { mode: 0o644 })
    const r = run([
      '--dir',
      dir,
      '--kubeconfig',
      kubeconfig,
      '--listen',
      `${host}:${port}`,
      '--cert-host',
      'api.mini.test',
    ])
    try {
      expect(await r.firstLine).to.equal(`listening https://${host}:${port}`)
      expect((await stat(kubeconfig)).mode & 0o777).to.equal(0o600)
      const kc = new KubeConfig()
      kc.loadFromFile(kubeconfig)
      const core = kc.makeApiClient(CoreV1Api)
      await core.createNamespace({ body: { metadata: { name: 'mini' } } })
      expect(await readdir(path.join(dir, 'namespaces'))).to.include('mini.json')
    } finally {
      r.kill('SIGTERM')
    }
    expect(await r.exited).to.deep.equal({ code: 0, signal: null })
    expect(r.stderr()).to.equal('')
  })

  const graces: Record<string, { args: string[]; env: NodeJS.ProcessEnv }> = {
    '--node-monitor-grace-period': { args: ['--node-monitor-grace-period', '300ms'], env: {} },
    'CONSTELL_MINI_NODE_GRACE_PERIOD, as mini passes it on': {
      args: [],
      env: { CONSTELL_MINI_NODE_GRACE_PERIOD: '300ms' },
    },
  }
  for (const [name, tc] of Object.entries(graces))
    it(`marks a Node without heartbeats NotReady after the grace period of ${name}`, async () => {
      const kubeconfig = path.join(tmp.dir, 'admin.conf')
      const r = run(['--dir', path.join(tmp.dir, 'api'), '--kubeconfig', kubeconfig, ...tc.args], tc.env)
      try {
        await r.firstLine
        const kc = new KubeConfig()
        kc.loadFromFile(kubeconfig)
        const core = kc.makeApiClient(CoreV1Api)
        await core.createNode({ body: { metadata: { name: 'silent' } } })
        const ready = await eventually('the Node marked', async () => {
          const node = await core.readNode({ name: 'silent' })
          return node.status?.conditions?.find((c) => c.type === 'Ready')
        })
        expect(ready).to.include({ status: 'Unknown', reason: 'NodeStatusNeverUpdated' })
      } finally {
        r.kill('SIGTERM')
      }
      expect((await r.exited).code).to.equal(0)
    })

  it('exits 1 with the reason when it cannot listen', async () => {
    const r = run(['--dir', tmp.dir, '--kubeconfig', path.join(tmp.dir, 'k'), '--listen', '192.0.2.1:6443'])
    expect((await r.exited).code).to.equal(1)
    expect(r.stderr()).to.match(/^Error: .*(EADDRNOTAVAIL|address not available)/i)
  })
})
