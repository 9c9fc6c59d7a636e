/**
 * A Kubernetes upgrade of a running mini cluster, end to end as CLI processes: `mini up --kubernetes
 * v1.31.13` (1 control plane, 2 workers), then `upgrade apply --kubernetes v1.32.9`. A component with
 * a wrong hash stops it before any node changes; Ctrl-C after the first node and the same command
 * again finish it without redoing that node; `status` then shows the API and every kubelet at
 * v1.32.9, the kubeadm fake's log shows kubeadm's order, and a worker added afterwards joins at
 * v1.32.9. Kubernetes is SIMULATED (the kubeadm fake and the kubelet stand-in of each version, run
 * by the real upgrade agent on every node); tpm-ek, loopback addresses, no Helm releases.
 * One cluster for the whole story: each step needs the one before (about 40 s).
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parseDocument } from 'yaml'
import { miniPaths } from '../../src/lib/mini/layout.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { simulatedComponents, simulatorPaths } from '../../src/lib/simulator/index.js'
import { expect } from '../support/chai.js'
import { runCli, spawnCli, type CliResult } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

const FROM = 'v1.31.13'
const TO = 'v1.32.9'

interface StatusJson {
  kubernetesVersion: string
  healthy: boolean
  nodes: Array<{ name: string; kubernetes?: { ready: boolean; kubeletVersion?: string } }>
  kubernetesUpgrade?: { target: string; state: string; atTarget: number }
}

interface KubeadmCall {
  command: string
  node: string
  target?: string
  ok: boolean
}

const ok = (r: CliResult, what: string) => expect(r.code, `${what}: ${r.stdout}\n${r.stderr}`).to.equal(0)

describe('constellation upgrade apply --kubernetes on a mini cluster (CLI processes)', function () {
  this.timeout(240_000)
  let dir: string
  let ws: string
  let cleanup: () => Promise<void>
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir('constell-k8sup-'))
    ws = path.join(dir, 'ws')
  })
  afterEach(async () => {
    await runCli(['mini', 'down', '-C', ws, '--purge'], { timeoutMs: 60_000 })
    await cleanup()
  })

  it('a wrong hash stops before any node; Ctrl-C after the first node and a rerun finish it; status, kubeadm order and a new worker at the target', async () => {
    const cli = (args: string[], timeoutMs = 90_000) => runCli([...args, '-C', ws], { timeoutMs })
    const status = async () => {
      const r = await cli(['status', '--json'])
      return JSON.parse(r.stdout) as StatusJson
    }
    const kubeadmCalls = async () => {
      const text = await readFile(miniPaths(ws).kubeadmLog, 'utf8').catch(() => '')
      return text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as KubeadmCall)
    }
    ok(
      await cli(
        [
          'mini',
          'up',
          '--kubernetes',
          FROM,
          '--control-planes',
          '1',
          '--workers',
          '2',
          '--network',
          'loopback',
          '--skip-helm',
        ],
        120_000,
      ),
      'mini up',
    )

    // 1. the config's mirrors for the target, one with a wrong sha256: the first node's agent refuses
    //    it before anything changes; kubeadm is never called and no node is left cordoned
    const configFile = workspacePaths(ws).config
    const original = await readFile(configFile, 'utf8')
    const doc = parseDocument(original)
    const simulator = simulatorPaths()
    const mirrors = simulatedComponents(TO, {
      nodeBinary: process.execPath,
      kubeadmFake: simulator.kubeadmFake,
      kubeletUnit: simulator.kubeletUnit,
    })
    mirrors[1]!.hash = `sha256:${'0'.repeat(64)}`
    doc.set('kubernetesVersion', TO)
    doc.set('kubernetesComponents', mirrors)
    await writeFile(configFile, doc.toString())
    const bad = await cli(['upgrade', 'apply', '--kubernetes', TO, '--yes'])
    expect(bad.code, bad.stderr + bad.stdout).to.equal(1)
    expect(bad.stdout).to.include("from the config's kubernetesComponents")
    expect(bad.stderr).to.match(
      /upgrading control-plane-0 to v1\.32\.9 failed \(download\): .*sha256 mismatch/,
    )
    expect(bad.stderr).to.include('nothing on control-plane-0 changed and it is schedulable again')
    expect(await kubeadmCalls()).to.deep.equal([])
    const afterBad = await status()
    expect(afterBad.kubernetesVersion).to.equal(FROM)
    for (const n of afterBad.nodes) expect(n.kubernetes?.kubeletVersion, n.name).to.equal(FROM)
    expect(afterBad.kubernetesUpgrade).to.deep.include({ target: TO, state: 'failed', atTarget: 0 })
    expect(afterBad.healthy).to.equal(false)
    await writeFile(configFile, original)

    // 2. Ctrl-C once the first node is done (worker-0 is being cordoned): exit 130, the run resumes
    const run = spawnCli(['upgrade', 'apply', '--kubernetes', TO, '--yes', '-C', ws])
    let stderr = ''
    const firstDone = new Promise<void>((resolve) => {
      run.child.stderr?.on('data', (d: Buffer) => {
        stderr += d.toString()
        if (stderr.includes('worker-0: cordon')) resolve()
      })
    })
    await Promise.race([firstDone, run.result])
    run.child.kill('SIGINT')
    const cut = await run.result
    expect(cut.code, stderr).to.equal(130)
    expect(stderr).to.include('run the same `upgrade apply --kubernetes` again to resume')
    expect(stderr).to.include('control-plane-0: uncordon')
    const midway = await status()
    expect(midway.kubernetesVersion).to.equal(TO)
    expect(midway.kubernetesUpgrade).to.deep.include({ target: TO, state: 'running' })

    const resumed = await cli(['upgrade', 'apply', '--kubernetes', TO, '--yes', '--json'])
    ok(resumed, 'upgrade apply (resumed)')
    expect(resumed.stderr).to.match(/resuming upgrade v1\.32\.9-/)
    expect(resumed.stderr).to.match(/control-plane-0 +control-plane +v1\.32\.9 +done \(at v1\.32\.9\)/)
    const report = (
      JSON.parse(resumed.stdout) as {
        report: { resumed: boolean; nodes: Array<{ name: string; outcome: string }> }
      }
    ).report
    expect(report.resumed).to.equal(true)
    expect(report.nodes.find((n) => n.name === 'control-plane-0')?.outcome).to.equal('already at target')

    // 3. every kubelet and the API at the target, every node schedulable and Ready
    const done = await status()
    expect(done.kubernetesVersion).to.equal(TO)
    for (const n of done.nodes)
      expect(n.kubernetes, n.name).to.deep.include({ ready: true, kubeletVersion: TO })
    expect(done.kubernetesUpgrade).to.deep.include({ target: TO, state: 'succeeded', atTarget: 3 })
    expect(done.healthy).to.equal(true)

    // 4. kubeadm's documented order, each node once: plan+apply on the first control plane, node on the workers
    expect((await kubeadmCalls()).map((c) => `${c.command} ${c.node} ${c.ok}`)).to.deep.equal([
      'upgrade plan control-plane-0 true',
      'upgrade apply control-plane-0 true',
      'upgrade node worker-0 true',
      'upgrade node worker-1 true',
    ])

    // 5. a worker added afterwards joins at the target (its join ticket carries the cluster's version)
    ok(await cli(['mini', 'add', 'worker-2', '--role', 'worker'], 120_000), 'mini add')
    const grown = await status()
    expect(grown.nodes.find((n) => n.name === 'worker-2')?.kubernetes).to.deep.include({
      ready: true,
      kubeletVersion: TO,
    })

    // 6. nothing left to do
    const again = await cli(['upgrade', 'apply', '--kubernetes', TO, '--yes'])
    ok(again, 'upgrade apply (again)')
    expect(again.stdout).to.include(`Every node is at ${TO}: nothing to do.`)
  })
})
