/**
 * `constellation mini` nodes as machines that crash, get reset and are rebooted by impatient
 * operators, as CLI processes: ten power cuts (`mini reboot --hard`) in a row of a worker and of the
 * sole control plane (back through `constellation recover` each time) must each come back, and the
 * TPM must never count one toward its dictionary-attack lockout (read with tpm2_getcap against the
 * node's own swtpm); a `mini reboot` killed half way (SIGKILL), interrupted (SIGTERM: 143), or out
 * of time (exit 1, naming what it waits for) leaves a node that still comes up on its own, because
 * its supervisor, not the command, boots it; a refused node's reason reaches the waiting command.
 *
 * Slow (about 1.5 min alone, up to 3 min beside another e2e file on 2 cores): it boots one cluster
 * and reboots its nodes some 25 times, each reboot a real boot (swtpm, state-disk setup with
 * cryptsetup, an attested rejoin or recover). Sized for 2 cores: 1 control plane + 1 worker on
 * loopback addresses, no Helm; the steps depend on each other, so the cluster is shared.
 */
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { CLUSTER_MARKER, markedProcesses } from '../../src/lib/mini/daemons.js'
import { readMiniRecord } from '../../src/lib/mini/index.js'
import { miniPaths, type MiniRecord } from '../../src/lib/mini/layout.js'
import { nodePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { CLI_ARGS, runCli, type CliResult } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir } from '../support/temp.js'
import { spawn } from 'node:child_process'

const run = promisify(execFile)
const REBOOTS = 10

/** The TPM's lockout state by tpm2_getcap, through a byte pipe to the node's swtpm socket (TCTI cmd). */
async function lockout(ws: string, node: string): Promise<{ counter: number; inLockout: number }> {
  const socket = miniPaths(ws).node(node).sockets.swtpm
  const pipe = `const s=require('net').connect(${JSON.stringify(socket)});process.stdin.pipe(s);s.pipe(process.stdout)`
  const { stdout } = await run('tpm2_getcap', ['properties-variable'], {
    env: { ...process.env, TPM2TOOLS_TCTI: `cmd:${process.execPath} -e "${pipe.replaceAll('"', '\\"')}"` },
  })
  const counter = /TPM2_PT_LOCKOUT_COUNTER:\s*(0x[0-9a-fA-F]+)/.exec(stdout)?.[1]
  const inLockout = /inLockout:\s*(\d+)/.exec(stdout)?.[1]
  if (counter === undefined || inLockout === undefined) throw new Error(`tpm2_getcap said:\n${stdout}`)
  return { counter: Number(counter), inLockout: Number(inLockout) }
}

/** CLI processes a test started and still runs: killed after each test, whatever happened. */
const running = new Set<ReturnType<typeof spawn>>()

/** A CLI process the test watches while it runs: its stderr so far, its end, its pid. */
function startCli(args: readonly string[]) {
  const child = spawn(process.execPath, [...CLI_ARGS, ...args], {
    env: { ...process.env, CONSTELL_NO_SPINNER: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const out = { stdout: '', stderr: '' }
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()))
  running.add(child)
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => {
      running.delete(child)
      resolve({ code, stdout: out.stdout, stderr: out.stderr })
    }),
  )
  const said = (what: string | RegExp) =>
    eventually(`${args.join(' ')} saying ${String(what)}`, async () =>
      (typeof what === 'string' ? out.stderr.includes(what) : what.test(out.stderr)) ? true : undefined,
    )
  return { child, done, said, out }
}

describe('constellation mini: nodes that crash and reboot (CLI processes)', function () {
  this.timeout(600_000)
  let dir: string
  let cleanup: () => Promise<void>
  let ws: string
  let record: MiniRecord
  let recover: string[]

  /** `status --json`: every node's attestation and PCR 15. */
  const nodeStates = async () => {
    const status = await runCli(['status', '-C', ws, '--json'])
    const report = JSON.parse(status.stdout || '{}') as {
      nodes?: Array<{ name: string; attestation: string; clusterIdPcr: string }>
    }
    return { status, nodes: (report.nodes ?? []).map((n) => [n.name, n.attestation, n.clusterIdPcr]) }
  }
  const HEALTHY = [
    ['control-plane-0', 'trusted', 'match'],
    ['worker-0', 'trusted', 'match'],
  ]
  const expectHealthy = async () => {
    const { status, nodes } = await nodeStates()
    expect(status.code, status.stdout + status.stderr).to.equal(0)
    expect(nodes).to.deep.equal(HEALTHY)
  }
  /** Every node trusted and of this cluster again, without anyone waiting for it (status asks them). */
  const cameBack = (what: string) =>
    eventually(
      what,
      async () => {
        const { status, nodes } = await nodeStates()
        return status.code === 0 && JSON.stringify(nodes) === JSON.stringify(HEALTHY) ? true : undefined
      },
      120_000,
    )

  before(async () => {
    ;({ dir, cleanup } = await makeTempDir('constell-machines-'))
    ws = path.join(dir, 'ws')
    const up = await runCli(
      [
        'mini',
        'up',
        '-C',
        ws,
        '--control-planes',
        '1',
        '--workers',
        '1',
        '--network',
        'loopback',
        '--skip-helm',
      ],
      { timeoutMs: 180_000 },
    )
    expect(up.code, up.stderr + up.stdout).to.equal(0)
    record = (await readMiniRecord(ws))!
    const cp0 = record.nodes[0]!
    recover = ['recover', '-C', ws, '--endpoint', `${cp0.address}:9999`, '--timeout', '60s']
  })
  afterEach(() => {
    for (const child of running) child.kill('SIGKILL')
  })
  after(async () => {
    if (ws) {
      const down = await runCli(['mini', 'down', '-C', ws], { timeoutMs: 120_000 })
      expect(down.code, down.stderr + down.stdout).to.equal(0)
      if (record) expect(await markedProcesses(CLUSTER_MARKER, record.network.id)).to.deep.equal([])
    }
    await cleanup?.()
  })

  it(`${REBOOTS} power cuts in a row of a worker: it comes back each time, its TPM never counts one`, async () => {
    for (let i = 1; i <= REBOOTS; i++) {
      const reboot = await runCli(['mini', 'reboot', 'worker-0', '-C', ws, '--hard'], { timeoutMs: 120_000 })
      expect(reboot.code, `reboot ${i}: ${reboot.stderr}`).to.equal(0)
      expect(reboot.stdout).to.include('worker-0 is back')
      expect(await lockout(ws, 'worker-0'), `after power cut ${i}`).to.deep.equal({
        counter: 0,
        inLockout: 0,
      })
    }
    expect(
      (await readFile(miniPaths(ws).node('worker-0').log('state-disk'), 'utf8')).match(
        /PCR 15 carries the cluster ID again/g,
      ),
    ).to.have.length(REBOOTS)
    await expectHealthy()
  })

  it(`${REBOOTS} power cuts in a row of the sole control plane: it waits for recover, says so, and comes back after each`, async () => {
    for (let i = 1; i <= REBOOTS; i++) {
      const reboot = startCli(['mini', 'reboot', 'control-plane-0', '-C', ws, '--hard'])
      await reboot.said(
        `control-plane-0: waiting for \`constellation ${recover.slice(0, 5).join(' ')}\`: no other control plane is up`,
      )
      const recovered = await runCli(recover)
      expect(recovered.code, `recover ${i}: ${recovered.stdout}${recovered.stderr}`).to.equal(0)
      const result = await reboot.done
      expect(result.code, `reboot ${i}: ${result.stderr}`).to.equal(0)
      expect(await lockout(ws, 'control-plane-0'), `after power cut ${i}`).to.deep.equal({
        counter: 0,
        inLockout: 0,
      })
    }
    await expectHealthy()
  })

  it('a mini reboot killed half way (SIGKILL): the node still comes up', async () => {
    const reboot = startCli(['mini', 'reboot', 'worker-0', '-C', ws])
    await reboot.said('worker-0 boots:')
    reboot.child.kill('SIGKILL')
    expect((await reboot.done).code).to.equal(null)
    await cameBack('worker-0 back after its mini reboot was killed')
  })

  it('mini reboot interrupted (SIGTERM) or out of time: 143 or 1 with one sentence on the node, which still comes up', async () => {
    // SIGTERM while the sole control plane waits for recover
    const reboot = startCli(['mini', 'reboot', 'control-plane-0', '-C', ws])
    await reboot.said('waiting for `constellation recover')
    reboot.child.kill('SIGTERM')
    const interrupted = await reboot.done
    expect(interrupted.code, interrupted.stderr + interrupted.stdout).to.equal(143)
    expect(interrupted.stderr).to.match(
      /mini reboot was interrupted \(SIGTERM\): control-plane-0 is still booting \(waiting for `constellation recover .*`: no other control plane is up to give it its disk key\); `constellation status -C .*` shows when it is back/,
    )
    expect(interrupted.stderr, 'no log dumped as for a failure').to.not.match(/ends with:|This is a bug/)
    expect((await runCli(recover)).code).to.equal(0)
    await cameBack('control-plane-0 back after its interrupted reboot and recover')

    // --timeout runs out while it waits for recover: exit 1, naming what it waits for
    const late = await runCli(['mini', 'reboot', 'control-plane-0', '-C', ws, '--timeout', '3s'], {
      timeoutMs: 60_000,
    })
    expect(late.code, late.stderr + late.stdout).to.equal(1)
    expect(late.stderr).to.match(
      /control-plane-0 is not back after 3 s: it is waiting for `constellation recover -C .* --endpoint .*:9999`: no other control plane is up to give it its disk key/,
    )
    expect(late.stderr).to.match(/it keeps booting on its own/)
    expect(late.stderr).to.not.match(/This is a bug/)
    expect((await runCli(recover)).code).to.equal(0)
    await cameBack('control-plane-0 back after its reboot timed out and recover')
  })

  it('a worker refused after join-config update: mini reboot says why while it waits; restored, the node comes back on its own', async () => {
    const config = path.join(ws, 'constellation-conf.yaml')
    const original = await readFile(config, 'utf8')
    const tpmEk = original.indexOf('  tpmEK:')
    const pcr4 = original.indexOf('"4":', tpmEk)
    // PCR 4 holds the measured boot's value (hex, unquoted in YAML unless it is all digits)
    const value = original.indexOf('expected: ', pcr4) + 'expected: '.length
    const at = original[value] === '"' ? value + 1 : value
    await writeFile(config, original.slice(0, at) + 'ab'.repeat(32) + original.slice(at + 64))
    const update = (await runCli(['join-config', 'update', '-C', ws, '--yes'])).code
    expect(update).to.equal(0)
    // the join service copies the ConfigMap into its file every 2 s and follows the file
    const joinConfig = nodePaths(miniPaths(ws).node('control-plane-0').root).joinConfigFile
    await eventually('the join service enforcing the new PCR 4', async () =>
      (await readFile(joinConfig, 'utf8')).includes('ab'.repeat(32)) ? true : undefined,
    )
    const refused = await runCli(['mini', 'reboot', 'worker-0', '-C', ws, '--timeout', '8s'], {
      timeoutMs: 60_000,
    })
    expect(refused.code, refused.stderr + refused.stdout).to.equal(1)
    expect(refused.stderr).to.match(
      /• worker-0: refused: the join service at [\d.]+:30090 refused it: .*untrusted measurement value [0-9a-f]{64} at index 4/,
    )
    expect(refused.stderr).to.match(
      /worker-0 is not back after 8 s: it is waiting for its disk key .*; last refusal: .*index 4/,
    )
    await writeFile(config, original)
    expect((await runCli(['join-config', 'update', '-C', ws, '--yes'])).code).to.equal(0)
    await cameBack('worker-0 back once the measurements are restored')
  })
})
