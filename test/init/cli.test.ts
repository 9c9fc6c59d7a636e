import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import type { TpmConfig } from '../../src/lib/tpm/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import {
  setClusterEndpoint,
  startDaemonProcess,
  startLocalNode,
  type LocalNode,
} from '../support/local-node.js'
import { freePort, holdPort } from '../support/ports.js'

describe('constellation init / bootstrap run (CLI processes)', function () {
  this.timeout(180_000)
  let node: LocalNode
  beforeEach(async () => (node = await startLocalNode()))
  afterEach(() => node.stop())

  it('bootstrap run serves Init; init --json writes the kubeconfig and reports the cluster ID; the daemon then exits 0', async () => {
    const daemon = await startDaemonProcess(node)
    const home = path.join(node.dir, 'home')
    await mkdir(path.join(home, '.kube'), { recursive: true })
    const userKubeconfig = path.join(home, '.kube', 'config')
    await writeFile(
      userKubeconfig,
      stringifyYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'mine', cluster: { server: 'https://mine:6443' } }],
      }),
    )
    const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--json', '--merge-kubeconfig'], {
      env: { HOME: home, KUBECONFIG: '' },
    })
    await daemon.expectInitSucceeded(res)
    const out = JSON.parse(res.stdout) as {
      clusterID: string
      kubeconfig: string
      masterSecret: string
      mergedInto: string
    }
    expect(out.mergedInto).to.equal(userKubeconfig)
    const merged = parse(await readFile(userKubeconfig, 'utf8')) as { clusters: Array<{ name: string }> }
    expect(merged.clusters.map((c) => c.name)).to.deep.equal([
      'mine',
      `constell-${out.clusterID.slice(0, 8)}`,
    ])
    const ws = workspacePaths(node.workspace)
    expect(out).to.include({ kubeconfig: ws.adminConf, masterSecret: ws.masterSecret })
    expect(out.clusterID).to.match(/^[0-9a-f]{64}$/)
    expect((await stat(ws.adminConf)).mode & 0o777).to.equal(0o600)
    const d = await daemon.exited
    expect(d.code, d.stderr).to.equal(0)
    const lines = d.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string })
    expect(lines.map((l) => l.msg)).to.include('Cluster initialized')
    expect((await readPcrs(node.swtpm.open, [15])).get(15)?.equals(Buffer.alloc(32))).to.equal(false)
  })

  it('a second bootstrap run on the initialized node refuses to serve', async () => {
    const { extendPcr } = await import('../../src/lib/tpm/index.js')
    await extendPcr(node.swtpm.open, 15, Buffer.alloc(32, 7))
    const nodeConfigFile = path.join(node.dir, 'node-config.yaml')
    await writeFile(nodeConfigFile, stringifyYaml(node.nodeConfig(`127.0.0.1:${await freePort()}`)))
    const res = await runCli(['bootstrap', 'run', '--config', nodeConfigFile])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.match(/this node was bootstrapped before \(PCR 15 is/)
  })

  const noTpm: Record<string, () => Promise<{ tpm: TpmConfig; named: string }>> = {
    'a device that does not exist': async () => ({
      tpm: { device: '/nonexistent/tpmrm0' },
      named: 'opening TPM device /nonexistent/tpmrm0',
    }),
    'a swtpm that does not listen': async () => {
      const endpoint = `127.0.0.1:${await freePort()}`
      return { tpm: { swtpm: endpoint }, named: `connecting to swtpm at ${endpoint}` }
    },
  }
  for (const [name, setup] of Object.entries(noTpm)) {
    it(`bootstrap run with ${name} exits 1, naming it and the tpm setting (a setup error, not a bug)`, async () => {
      const { tpm, named } = await setup()
      const nodeConfigFile = path.join(node.dir, 'node-config.yaml')
      const config = node.nodeConfig(`127.0.0.1:${await freePort()}`)
      await writeFile(nodeConfigFile, stringifyYaml({ ...config, tpm }))
      const res = await runCli(['bootstrap', 'run', '--config', nodeConfigFile])
      expect(res.code, res.stderr).to.equal(1)
      expect(res.stderr).to.include(named).and.include("node config's tpm setting")
      expect(res.stderr).to.not.include('This is a bug')
    })
  }

  it('bootstrap run on a port another process holds exits 1 naming initServer.listen; its stderr stays JSON lines', async () => {
    const held = await holdPort()
    try {
      const listen = `127.0.0.1:${held.port}`
      const nodeConfigFile = path.join(node.dir, 'node-config.yaml')
      await writeFile(nodeConfigFile, stringifyYaml(node.nodeConfig(listen)))
      const res = await runCli(['bootstrap', 'run', '--config', nodeConfigFile])
      expect(res.code, res.stderr).to.equal(1)
      const [logLines, rendered] = splitAt(res.stderr.trim().split('\n'), (l) => l.startsWith('Error: '))
      expect(rendered[0]).to.include(`listening on ${listen}`).and.include('EADDRINUSE')
      expect(rendered.join('\n')).to.include('initServer.listen').and.not.include('This is a bug')
      for (const line of logLines) expect(() => JSON.parse(line), line).to.not.throw()
    } finally {
      await held.release()
    }
  })

  it('refuses a bad node config with the file, line and key, and exits non-zero', async () => {
    const file = path.join(node.dir, 'bad.yaml')
    await writeFile(
      file,
      'attestationVariant: qemu-vtpm\ntpm:\n  swtpm: 127.0.0.1:1\ninitServer:\n  listen: nowhere\nstateDisk:\n  device: relative\n',
    )
    const res = await runCli(['bootstrap', 'run', '--config', file])
    expect(res.code).to.not.equal(0)
    expect(res.stderr).to.include(`${file}:5:`).and.include('initServer.listen')
    expect(res.stderr).to.include('initSecretHash').and.include('metadata')
  })

  it('refuses to init when constellation-admin.conf exists, and leaves it untouched', async () => {
    const ws = workspacePaths(node.workspace)
    await writeFile(ws.adminConf, 'precious\n', { mode: 0o600 })
    const stateBefore = await readFile(ws.state, 'utf8')
    const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--timeout', '5s'])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.include(`${ws.adminConf} already exists`)
    expect(await readFile(ws.adminConf, 'utf8')).to.equal('precious\n')
    expect(await readFile(ws.state, 'utf8')).to.equal(stateBefore)
    await expect(stat(ws.masterSecret)).to.be.rejected
  })

  it('reports an unreachable node with exit code 3 after the timeout; the master secret stays', async () => {
    await setClusterEndpoint(node.workspace, `127.0.0.1:${await freePort()}`)
    const res = await runCli(['init', '--skip-helm', '-C', node.workspace, '--timeout', '2s'])
    expect(res.code).to.equal(3)
    expect(res.stderr).to.match(
      /could not reach the node at 127\.0\.0\.1:\d+: no answer within 2s \(last error: connect ECONNREFUSED 127\.0\.0\.1:\d+\)\n/,
    )
    expect(res.stderr, 'grpc-js bookkeeping stays out').not.to.match(
      /Resolution note|No connection established/,
    )
    expect(parse(await readFile(workspacePaths(node.workspace).masterSecret, 'utf8'))).to.have.keys(
      'key',
      'salt',
    )
  })
})

/** The items before the first match, and the rest. */
function splitAt<T>(items: T[], isFirst: (item: T) => boolean): [T[], T[]] {
  const i = items.findIndex(isFirst)
  return i < 0 ? [items, []] : [items.slice(0, i), items.slice(i)]
}
