/**
 * `constellation mini` as kubectl sees it, and a node that dies: `mini up` as a CLI process (1 control
 * plane + 1 worker on loopback addresses, the real helm 4 for the releases; Kubernetes SIMULATED by
 * the contract fakes), then the everyday reads of the real kubectl 1.35 against it; then the
 * worker's processes are killed, the simulated control plane marks it NotReady (kubectl and
 * `status` say so), and `mini reboot` brings it back Ready.
 *
 * Slow (about 1–2 minutes on 2 cores): `mini up` boots two nodes (swtpm, LUKS2 images, aTLS init,
 * an attested join, helm), and the dead node must then miss its heartbeats for a whole grace
 * period before it is NotReady. The grace is shortened to GRACE through
 * CONSTELL_MINI_NODE_GRACE_PERIOD (a real cluster's is 40 s), which `mini up` and `mini reboot`
 * pass on to the simulator and the kubelet stand-ins. One test: each step needs the cluster the
 * last one left.
 */
import path from 'node:path'
import { markedProcesses, NODE_MARKER } from '../../src/lib/mini/daemons.js'
import { readMiniRecord } from '../../src/lib/mini/index.js'
import { type MiniRecord } from '../../src/lib/mini/layout.js'
import { nodeMarker } from '../../src/lib/mini/node-boot.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { runProcess } from '../../src/lib/system/process.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { realHelmEnv, realKubectl } from '../support/helm.js'
import { makeTempDir } from '../support/temp.js'

const GRACE = '8s'

/**
 * The node dies: every process of it is killed at once (SIGKILL: no shutdown, as when its machine
 * loses power). Its processes carry the node's marker in their environment (src/lib/mini/daemons.ts).
 */
async function killNode(record: MiniRecord, node: string): Promise<number> {
  const pids = await markedProcesses(NODE_MARKER, nodeMarker(record.network.id, node))
  for (const pid of pids) process.kill(pid, 'SIGKILL')
  return pids.length
}

/** kubectl's header, split where its tabwriter put 2+ spaces (some column names hold one). */
const header = (out: string) => (out.split('\n')[0] ?? '').trim().split(/\s{2,}/)

describe('constellation mini with the real kubectl 1.35: everyday reads, and a killed node NotReady until it reboots (CLI processes)', function () {
  this.timeout(300_000)
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir('constell-mini-kubectl-')))
  afterEach(async () => {
    // a failed case still removes its cluster
    await runCli(['mini', 'down', '-C', path.join(dir, 'ws')], { timeoutMs: 60_000 })
    await cleanup()
  })

  it('get nodes -o wide, get ns, get deploy -A, auth whoami, get --raw /readyz; a killed worker goes NotReady (kubectl, status), and Ready after mini reboot', async () => {
    const ws = path.join(dir, 'ws')
    const env = { ...(await realHelmEnv(dir, 4)), CONSTELL_MINI_NODE_GRACE_PERIOD: GRACE }
    const up = await runCli(
      ['mini', 'up', '-C', ws, '--network', 'loopback', '--control-planes', '1', '--workers', '1'],
      { env, timeoutMs: 150_000 },
    )
    expect(up.code, up.stderr + up.stdout).to.equal(0)
    const record = (await readMiniRecord(ws))!
    const address = (name: string) =>
      record.nodes.find((n) => n.name === name)!.address.replaceAll('.', '\\.')

    const kubectlBin = await realKubectl()
    const kubectl = async (...args: string[]) => {
      const r = await runProcess(kubectlBin, ['--kubeconfig', workspacePaths(ws).adminConf, ...args], {
        env: { PATH: process.env.PATH, HOME: dir },
        timeoutMs: 30_000,
      })
      expect(r.code, `kubectl ${args.join(' ')}: ${r.stderr}`).to.equal(0)
      return r.stdout
    }

    // the kubelet stand-ins report the host's kernel once they post their nodes' status
    const wide = await eventually('both nodes posted by their kubelets', async () => {
      const out = await kubectl('get', 'nodes', '-o', 'wide')
      return out.split('\n').filter((l) => /\s<unknown>\s+<unknown>$/.test(l)).length === 0 ? out : undefined
    })
    expect(header(wide)).to.deep.equal([
      'NAME',
      'STATUS',
      'ROLES',
      'AGE',
      'VERSION',
      'INTERNAL-IP',
      'EXTERNAL-IP',
      'OS-IMAGE',
      'KERNEL-VERSION',
      'CONTAINER-RUNTIME',
    ])
    for (const [name, role] of [
      ['control-plane-0', 'control-plane'],
      ['worker-0', '<none>'],
    ] as const)
      expect(wide).to.match(
        new RegExp(
          String.raw`^${name}\s+Ready\s+${role}\s+\d+[smh]\S*\s+v\d+\.\d+\.\d+\s+${address(name)}\s+<none>\s+linux \(SIMULATED kubelet\)\s+\S+\s+<unknown>$`,
          'm',
        ),
      )

    const ns = await kubectl('get', 'ns')
    expect(header(ns)).to.deep.equal(['NAME', 'STATUS', 'AGE'])
    expect(
      ns
        .split('\n')
        .slice(1)
        .filter(Boolean)
        .map((l) => l.split(/\s+/).slice(0, 2).join(' ')),
    ).to.include.members([
      'cert-manager Active',
      'default Active',
      'kube-node-lease Active',
      'kube-public Active',
      'kube-system Active',
    ])

    const deploy = await kubectl('get', 'deploy', '-A')
    expect(header(deploy)).to.deep.equal(['NAMESPACE', 'NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE'])
    expect(deploy).to.match(/^kube-system\s+coredns\s+1\/1\s+1\s+1\s+\d+\S*$/m)

    const whoami = await kubectl('auth', 'whoami')
    expect(whoami).to.match(/^Username\s+kubernetes-admin$/m)
    expect(await kubectl('get', '--raw', '/readyz')).to.equal('ok')

    const leases = await kubectl('get', 'leases', '-n', 'kube-node-lease')
    expect(header(leases)).to.deep.equal(['NAME', 'HOLDER', 'AGE'])
    expect(leases).to.match(/^worker-0\s+worker-0\s/m)

    // the worker dies: its kubelet stops renewing, and the node lifecycle controller marks it
    expect(await killNode(record, 'worker-0'), "worker-0's processes").to.be.greaterThan(0)
    await eventually(
      'worker-0 NotReady',
      async () => (/^worker-0\s+NotReady\s/m.test(await kubectl('get', 'nodes')) ? true : undefined),
      60_000,
    )
    expect(await kubectl('get', 'nodes')).to.match(/^control-plane-0\s+Ready\s/m)
    const status = await runCli(['status', '-C', ws, '--json'], { env })
    expect(status.code, 'not healthy').to.equal(1)
    const nodes = (
      JSON.parse(status.stdout) as {
        nodes: Array<{
          name: string
          attestation: string
          kubernetes?: { ready: boolean; notReady?: string }
        }>
      }
    ).nodes
    const worker = nodes.find((n) => n.name === 'worker-0')
    expect(worker?.kubernetes?.ready).to.equal(false)
    expect(worker?.kubernetes?.notReady).to.match(/NodeStatusUnknown: Kubelet stopped posting node status/)
    expect(worker?.attestation).to.equal('unreachable')
    expect(nodes.find((n) => n.name === 'control-plane-0')?.kubernetes?.ready).to.equal(true)

    // it boots again: its kubelet posts Ready
    const reboot = await runCli(['mini', 'reboot', 'worker-0', '-C', ws], { env, timeoutMs: 150_000 })
    expect(reboot.code, reboot.stderr + reboot.stdout).to.equal(0)
    await eventually(
      'worker-0 Ready again',
      async () => (/^worker-0\s+Ready\s/m.test(await kubectl('get', 'nodes')) ? true : undefined),
      60_000,
    )
    const after = JSON.parse(await runCli(['status', '-C', ws, '--json'], { env }).then((r) => r.stdout)) as {
      healthy: boolean
    }
    expect(after.healthy).to.equal(true)
  })
})
