/**
 * `constellation mini` end to end, as a user runs it: `mini up` as a CLI process (real swtpm per
 * node, LUKS2 images, aTLS init and attested joins, the real helm 4 for the releases; Kubernetes
 * SIMULATED by the contract fakes), then `status`, `verify`, reboots (rejoin), every control plane
 * rebooted (recover), a node's link cut while it boots (network namespaces), tpm-ek (the default:
 * TPMs manufactured by a local CA of the cluster) and qemu-vtpm (which every command says anchors
 * no key), and `mini down`, which must leave no process, namespace, link, mount, loop device or
 * file behind.
 *
 * Slow (about 10–40 s each): each case boots a whole cluster, and the steps of a case depend on
 * each other (a reboot needs a cluster that was initialized), so they are one test each.
 */
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { readMiniRecord, rebootNode } from '../../src/lib/mini/index.js'
import { miniPaths, type MiniRecord } from '../../src/lib/mini/layout.js'
import { markedProcesses, CLUSTER_MARKER, NODE_MARKER } from '../../src/lib/mini/daemons.js'
import { miniNetwork } from '../../src/lib/mini/network.js'
import { nodeMarker } from '../../src/lib/mini/node-boot.js'
import { loadNodeConfig } from '../../src/lib/nodeconfig/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { miniIo } from '../../src/wiring/mini.js'
import { connectAsNobody } from '../support/as-nobody.js'
import { expect } from '../support/chai.js'
import { runCli, type CliResult } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { realHelmEnv } from '../support/helm.js'
import { makeTempDir } from '../support/temp.js'

interface UpJson {
  simulated: string
  nodes: Array<{ name: string; role: string; address: string }>
  status: {
    healthy: boolean
    nodes: Array<{ name: string; attestation: string; clusterIdPcr: string; kubernetes?: { ready: boolean } }>
    releases?: Array<{ name: string; status: string }>
  }
}

const runner = createRunner()

/** Everything of the cluster `record` that could outlive `mini down`. */
async function leftovers(record: MiniRecord, workspace: string): Promise<string[]> {
  const found: string[] = []
  for (const pid of await markedProcesses(CLUSTER_MARKER, record.network.id)) found.push(`process ${pid}`)
  const namespaces = (await runner.run('ip', ['netns', 'list'])).stdout
  if (namespaces.includes(`cst-${record.network.id}-`)) found.push('network namespaces')
  if ((await runner.run('ip', ['-o', 'link', 'show'])).stdout.includes(`cst${record.network.id}`))
    found.push('links')
  const mounts = await readFile('/proc/mounts', 'utf8')
  if (mounts.includes(workspace)) found.push('mounts')
  if ((await runner.run('losetup', ['-nl', '-O', 'BACK-FILE'])).stdout.includes(workspace))
    found.push('loop devices')
  if (
    await stat(workspace).then(
      () => true,
      () => false,
    )
  )
    found.push(`files: ${(await readdir(workspace)).join(', ')}`)
  return found
}

/** Where the node's swtpm serves commands and control, read from its argv: HOST:PORT or unix:/path. */
async function swtpmChannels(record: MiniRecord, node: string): Promise<string[]> {
  const channels: string[] = []
  for (const pid of await markedProcesses(NODE_MARKER, nodeMarker(record.network.id, node))) {
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')
    if (path.basename(argv[0] ?? '') !== 'swtpm') continue
    for (const [i, arg] of argv.entries()) {
      if (arg !== '--server' && arg !== '--ctrl') continue
      const opts = new Map((argv[i + 1] ?? '').split(',').map((kv) => kv.split('=') as [string, string]))
      channels.push(
        opts.get('type') === 'unixio'
          ? `unix:${opts.get('path')}`
          : `${opts.get('bindaddr') ?? '127.0.0.1'}:${opts.get('port')}`,
      )
    }
  }
  return channels
}

/**
 * DESIGN §5: the key service and the TPM are the node's alone. Another local user is refused at
 * every one of them; a unix socket is 0600 in a 0700 folder.
 */
async function expectPrivateToTheNode(record: MiniRecord, ws: string, node: string): Promise<void> {
  const config = await loadNodeConfig(miniPaths(ws).node(node).config)
  const tpm = await swtpmChannels(record, node)
  expect(tpm, `${node}'s swtpm: its command and control channels`).to.have.length(2)
  const keyService = node.startsWith('control-plane') ? [config.keyService.listen] : []
  for (const address of [...keyService, ...tpm]) {
    expect(await connectAsNobody(address), `nobody connecting to ${address}`).to.equal('EACCES')
    if (!address.startsWith('unix:')) continue
    const socket = address.slice('unix:'.length)
    expect((await stat(socket)).mode & 0o777, socket).to.equal(0o600)
    expect((await stat(path.dirname(socket))).mode & 0o777, path.dirname(socket)).to.equal(0o700)
  }
}

function expectHealthy(result: CliResult, names: string[]): UpJson['status'] {
  expect(result.code, result.stdout + result.stderr).to.equal(0)
  const status =
    (JSON.parse(result.stdout) as { status?: UpJson['status'] }).status ?? JSON.parse(result.stdout)
  expect(status.nodes.map((n: { name: string }) => n.name)).to.have.members(names)
  for (const node of status.nodes) {
    expect(node.attestation, node.name).to.equal('trusted')
    expect(node.clusterIdPcr, node.name).to.equal('match')
    expect(node.kubernetes?.ready, node.name).to.equal(true)
  }
  return status
}

describe('constellation mini: a local cluster (CLI processes)', function () {
  this.timeout(300_000)
  let dir: string
  let cleanup: () => Promise<void>
  let env: NodeJS.ProcessEnv
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir('constell-mini-'))
    env = await realHelmEnv(dir, 4)
  })
  afterEach(async () => {
    // a failed case still removes its cluster
    await runCli(['mini', 'down', '-C', path.join(dir, 'ws')], { timeoutMs: 60_000 })
    await cleanup()
  })

  it('1 control plane + 2 workers on loopback addresses, tpm-ek by default: up, status, verify (EK chain and credential activation), key service and TPMs private to their node, a second up refused, down leaves only the master secret', async () => {
    expect(process.getuid?.(), 'acting as user nobody needs root (CI runs as root)').to.equal(0)
    // others may enter the test's folder: only what mini itself sets keeps them out
    await chmod(dir, 0o755)
    const ws = path.join(dir, 'ws')
    const up = await runCli(['mini', 'up', '-C', ws, '--network', 'loopback', '--json'], {
      env,
      timeoutMs: 240_000,
    })
    expect(up.code, up.stderr + up.stdout).to.equal(0)
    expect(up.stderr).to.include('Kubernetes is SIMULATED')
    expect(up.stderr).to.match(/attestation tpm-ek: manufacturing 3 TPMs with EK certificates/)
    expect(up.stderr).to.match(
      /constellation init: attesting control-plane-0 .*\(tpm-ek: EK certificate chain/,
    )
    const result = JSON.parse(up.stdout) as UpJson & { attestation: string }
    expect(result.attestation, 'the default').to.equal('tpm-ek')
    expect(result.simulated).to.match(/Kubernetes is SIMULATED/)
    const names = ['control-plane-0', 'worker-0', 'worker-1']
    expect(result.nodes.map((n) => n.name)).to.deep.equal(names)
    expect(new Set(result.nodes.map((n) => n.address)).size, 'an address per node').to.equal(3)
    expectHealthy({ ...up, stdout: JSON.stringify(result.status) }, names)
    expect(result.status.releases?.map((r) => [r.name, r.status])).to.have.deep.members([
      ['cilium', 'deployed'],
      ['coredns', 'deployed'],
      ['cert-manager', 'deployed'],
    ])

    // the workspace trusts the cluster CA's issuing certificate; every node config names it too
    const paths = miniPaths(ws)
    const config = await readFile(path.join(ws, 'constellation-conf.yaml'), 'utf8')
    expect(config).to.match(/^ {2}tpmEK:$/m)
    expect(config).to.match(/^ {4}roots:\n {6}- constellation-mini\/tpm-ca\/issuercert\.pem$/m)
    for (const name of names) {
      const nodeConfig = await readFile(paths.node(name).config, 'utf8')
      expect(nodeConfig).to.match(/^attestationVariant: tpm-ek$/m)
      expect(nodeConfig).to.include(`- ${paths.tpmCa.issuerCert}`)
    }
    // init activated a credential on cp-0; the workers' joins passed the challenge with their EKs
    const unitLog = (node: string, unit: string) =>
      readFile(path.join(paths.node(node).unitState, `${unit}.service.log`), 'utf8')
    expect(await readFile(paths.node('control-plane-0').log('bootstrap'), 'utf8')).to.include(
      'Credential activated for an attesting client',
    )
    expect(await unitLog('control-plane-0', 'constellation-joinservice')).to.match(
      /"rpc":"IssueJoinTicket","node":"worker-0","role":"worker".*"verdict":"ok"/,
    )

    const status = await runCli(['status', '-C', ws, '--json'], { env })
    expectHealthy(status, names)
    const statusJson = JSON.parse(status.stdout) as {
      simulated?: string
      attestation?: { anchored: boolean }
    }
    expect(statusJson.simulated).to.match(/SIMULATED/)
    expect(statusJson.attestation).to.include({ variant: 'tpm-ek', anchored: true })
    const plain = await runCli(['status', '-C', ws], { env })
    expect(plain.stdout).to.include('Kubernetes is SIMULATED')
    expect(plain.stdout).to.match(/^Attestation: tpm-ek is anchored: /m)
    const verify = await runCli(['verify', '-C', ws])
    expect(verify.code, verify.stderr + verify.stdout).to.equal(0)
    expect(verify.stdout).to.match(/is trusted: .*its TPM activated a credential/)
    expect(verify.stdout).to.match(/^tpm-ek is anchored: /m)
    const verifyJson = await runCli(['verify', '-C', ws, '--json'])
    expect(verifyJson.code, verifyJson.stderr + verifyJson.stdout).to.equal(0)
    const report = JSON.parse(verifyJson.stdout) as {
      variant: string
      trusted: boolean
      activation?: { activated: boolean }
      attestation?: { anchored: boolean }
    }
    expect(report).to.include({ variant: 'tpm-ek', trusted: true })
    expect(report.activation?.activated).to.equal(true)
    expect(report.attestation).to.include({ variant: 'tpm-ek', anchored: true })
    const record = (await readMiniRecord(ws))!
    expect(record.attestation).to.equal('tpm-ek')
    for (const node of ['control-plane-0', 'worker-0']) await expectPrivateToTheNode(record, ws, node)

    // one cluster per workspace: refused, and the running one is untouched
    const again = await runCli(['mini', 'up', '-C', ws, '--network', 'loopback'], { env })
    expect(again.code).to.equal(1)
    expect(again.stderr).to.match(/a mini cluster already runs in .*ws/)
    expectHealthy(await runCli(['status', '-C', ws, '--json'], { env }), names)

    const down = await runCli(['mini', 'down', '-C', ws, '--json'])
    expect(down.code, down.stderr + down.stdout).to.equal(0)
    const downResult = JSON.parse(down.stdout) as { stoppedProcesses: number; kept: string[] }
    expect(downResult.stoppedProcesses).to.be.greaterThan(0)
    // all gone but the master secret, which mini down keeps unless --purge
    expect(downResult.kept).to.deep.equal([path.join(ws, 'constellation-mastersecret.json')])
    expect(await leftovers(record, ws)).to.deep.equal(['files: constellation-mastersecret.json'])
    const twice = await runCli(['mini', 'down', '-C', ws])
    expect(twice.code).to.equal(1)
    expect(twice.stderr).to.match(/no mini cluster in/)
  })

  it('--attestation qemu-vtpm, 1 control plane + 1 worker, --merge-kubeconfig: works, and verify, status and recover say it anchors no key; recover asks before sending; down unmerges', async () => {
    const ws = path.join(dir, 'ws')
    const kubeconfig = path.join(dir, 'kube', 'config')
    await mkdir(path.dirname(kubeconfig))
    await writeFile(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{ name: work, cluster: { server: "https://work.example:6443" } }]\nusers: []\ncontexts: []\n',
    )
    const up = await runCli(
      [
        'mini',
        'up',
        '-C',
        ws,
        '--attestation',
        'qemu-vtpm',
        '--control-planes',
        '1',
        '--workers',
        '1',
        '--merge-kubeconfig',
        '--json',
      ],
      { env: { ...env, KUBECONFIG: kubeconfig }, timeoutMs: 120_000 },
    )
    expect(up.code, up.stderr + up.stdout).to.equal(0)
    expect(up.stderr).to.not.match(/manufacturing/)
    const result = JSON.parse(up.stdout) as UpJson & {
      attestation: string
      mergedKubeconfig: { file: string; context: string }
    }
    // merged as kind does: beside the user's own entry, and current
    expect(result.mergedKubeconfig.file).to.equal(kubeconfig)
    const merged = await readFile(kubeconfig, 'utf8')
    expect(merged).to.match(/name: work\b/)
    expect(merged).to.match(new RegExp(`^current-context: ${result.mergedKubeconfig.context}$`, 'm'))
    expect(result.attestation).to.equal('qemu-vtpm')
    const names = ['control-plane-0', 'worker-0']
    expectHealthy({ ...up, stdout: JSON.stringify(result.status) }, names)
    expect(up.stdout).to.include('"anchored": false')

    const verify = await runCli(['verify', '-C', ws])
    expect(verify.code, verify.stderr + verify.stdout).to.equal(0)
    expect(verify.stdout).to.match(/^qemu-vtpm is NOT anchored: it proves .*any TPM or program/m)
    const status = await runCli(['status', '-C', ws], { env })
    expect(status.code, status.stderr + status.stdout).to.equal(0)
    expect(status.stdout).to.match(/^Attestation: qemu-vtpm is NOT anchored: /m)
    const cp0 = result.nodes[0]!
    const recover = await runCli(['recover', '-C', ws, '--endpoint', `${cp0.address}:9999`, '--json'])
    expect(recover.code, recover.stdout + recover.stderr).to.equal(2)
    expect(recover.stdout).to.match(
      /refusing to send the master secret without confirmation: qemu-vtpm is NOT anchored/,
    )
    expect(JSON.parse(recover.stdout)).to.nested.include({ 'attestation.anchored': false })

    const record = (await readMiniRecord(ws))!
    const down = await runCli(['mini', 'down', '-C', ws, '--purge'])
    expect(down.code, down.stderr + down.stdout).to.equal(0)
    expect(await leftovers(record, ws)).to.deep.equal([])
    // what it merged is gone again, the user's own entry is not
    const after = await readFile(kubeconfig, 'utf8')
    expect(after).to.match(/name: work\b/)
    expect(after).to.not.include(result.mergedKubeconfig.context)
  })

  it('mini up killed half way: mini down still removes everything', async () => {
    const ws = path.join(dir, 'ws')
    const up = runCli(['mini', 'up', '-C', ws, '--skip-helm'], { env, timeoutMs: 120_000 })
    // killed (SIGKILL: no chance to clean up) once the nodes boot
    await eventually('nodes booting', async () =>
      (await readdir(path.join(miniPaths(ws).dir, 'nodes')).catch(() => [])).length > 0 ? true : undefined,
    )
    const record = (await readMiniRecord(ws))!
    await eventually('a node process', async () =>
      (await markedProcesses(CLUSTER_MARKER, record.network.id)).length > 0 ? true : undefined,
    )
    const upProcess = await upPid(ws)
    expect(upProcess, 'the mini up process').to.be.a('number')
    process.kill(upProcess!, 'SIGKILL')
    expect((await up).code).to.equal(null)
    const down = await runCli(['mini', 'down', '-C', ws, '--purge'])
    expect(down.code, down.stderr + down.stdout).to.equal(0)
    expect(await leftovers(record, ws)).to.deep.equal([])
  })

  it('mini up interrupted (SIGINT, as Ctrl-C): it removes what it started and exits 130', async () => {
    const ws = path.join(dir, 'ws')
    const stop = new AbortController()
    const up = runCli(['mini', 'up', '-C', ws, '--skip-helm'], {
      env,
      timeoutMs: 120_000,
      signal: stop.signal,
    })
    await eventually('nodes booting', async () =>
      (await readdir(path.join(miniPaths(ws).dir, 'nodes')).catch(() => [])).length > 0 ? true : undefined,
    )
    const record = (await readMiniRecord(ws))!
    process.kill((await upPid(ws))!, 'SIGINT')
    const result = await up
    expect(result.code, result.stderr + result.stdout).to.equal(130)
    expect(result.stderr).to.match(/mini up was interrupted \(SIGINT\)/)
    expect(result.stderr).to.match(/removing what it started/)
    // one sentence on the state; not what the interrupt did to the steps in flight (a log's tail,
    // a hint to finish a cluster that is gone)
    expect(result.stderr).to.match(
      /^Error: mini up was interrupted \(SIGINT\); what it started is removed\n/m,
    )
    expect(result.stderr).to.not.match(/ends with:|is empty|Hint:/)
    expect(await leftovers(record, ws)).to.deep.equal([])
  })

  it('3 control planes + 3 workers in network namespaces: reboots rejoin, a cut link heals, every control plane rebooted comes back through recover', async () => {
    expect(process.getuid?.(), 'network namespaces need root (CI runs as root)').to.equal(0)
    const ws = path.join(dir, 'ws')
    const up = await runCli(['mini', 'up', '-C', ws, '--control-planes', '3', '--workers', '3', '--json'], {
      env,
      timeoutMs: 240_000,
    })
    expect(up.code, up.stderr + up.stdout).to.equal(0)
    const names = [0, 1, 2].flatMap((i) => [`control-plane-${i}`, `worker-${i}`])
    expectHealthy({ ...up, stdout: JSON.stringify((JSON.parse(up.stdout) as UpJson).status) }, names)
    const record = (await readMiniRecord(ws))!
    expect(record.network.mode).to.equal('netns')
    const io = miniIo({ skipHelm: true, progress: () => {} })
    const setupLog = (node: string) => readFile(miniPaths(ws).node(node).log('state-disk'), 'utf8')

    // 1. a worker reboots: its disk key comes back from a join service
    await rebootNode(ws, 'worker-0', io)
    expect(await setupLog('worker-0')).to.match(
      /PCR 15 carries the cluster ID again.*"source":"[\d.]+:30090"/,
    )

    // 2. a worker's link is cut while it boots: it keeps asking, and rejoins once the link is back
    const network = miniNetwork(record.network, runner)
    const worker1 = record.nodes.find((n) => n.name === 'worker-1')!
    const rebooting = rebootNode(ws, 'worker-1', io, {
      whilePoweredOff: () => network.setLink(worker1.index, false),
    })
    await eventually('worker-1 failing to reach the network', async () =>
      (await setupLog('worker-1')).includes('Metadata service not reachable yet') ? true : undefined,
    )
    await network.setLink(worker1.index, true)
    await rebooting

    // 3. every control plane reboots: none can give another its key; recover the first, the
    // others then get theirs from its join service
    const cps = record.nodes.filter((n) => n.role === 'control-plane')
    const back = Promise.all(cps.map((cp) => rebootNode(ws, cp.name, io)))
    back.catch(() => {})
    const cp0 = cps[0]!
    const recovered = await runCli([
      'recover',
      '-C',
      ws,
      '--endpoint',
      `${cp0.address}:9999`,
      '--timeout',
      '60s',
    ])
    expect(recovered.code, recovered.stdout + recovered.stderr).to.equal(0)
    await back
    expect(await setupLog(cp0.name)).to.match(/PCR 15 carries the cluster ID again.*"source":"recovery"/)
    for (const cp of cps.slice(1))
      expect(await setupLog(cp.name)).to.match(/PCR 15 carries the cluster ID again/)
    expectHealthy(await runCli(['status', '-C', ws, '--json'], { env }), names)

    const down = await runCli(['mini', 'down', '-C', ws, '--purge'])
    expect(down.code, down.stderr + down.stdout).to.equal(0)
    expect(await leftovers(record, ws)).to.deep.equal([])
  })
})

/** The `mini up` CLI process of this workspace (found by its argv). */
async function upPid(ws: string): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes('mini\0up\0') && cmdline.includes(ws)) return Number(entry)
  }
  return undefined
}
