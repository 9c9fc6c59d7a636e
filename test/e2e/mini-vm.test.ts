/**
 * `constellation mini up --machines vm` end to end, as a user runs it: one control plane and one
 * worker, each a QEMU VM (TCG, one vCPU) booted from the cached node image under real systemd, with
 * swtpm behind the guest's /dev/tpmrm0 and the state disk mapped with dm-crypt + dm-integrity by
 * `state-disk setup`. Kubernetes is SIMULATED: the API simulator runs on the host, the kubeadm and
 * kubelet stand-ins in the guests (the API's folder shared into them over 9p).
 *
 * 1. mini up: init over aTLS from the host, the worker's join over aTLS through the join service on
 *    the control-plane VM; inside the worker /run/state is a dm-crypt mapping of its state disk,
 *    whose keyslot the key the join service derived for that disk (HKDF of the master secret with
 *    the disk's UUID, the disk recorded for worker-0 by the join service) opens.
 * 2. mini reboot (a reset: QEMU quits and starts again): a new boot, PCRs reset, the disk kept: it
 *    rejoins (the disk key from the join service again), and a file written before is intact.
 * 3. mini reboot --hard (QEMU and swtpm killed): it comes back again, with its data.
 * Then mini down, which leaves no QEMU, swtpm, tap, bridge or file behind.
 *
 * Production's state-disk format is kept (dm-crypt over dm-integrity, wiped); the keyslots take
 * mini's PBKDF2 floor, as on every mini node (argon2id's benchmark and 2 s per keyslot cost about
 * 45 s of each emulated boot). Slow, and slower the busier the host (TCG: every guest instruction
 * emulated): mini up took about 210 s on a quiet host with the image cached (plus about 25 s to
 * rebuild the image after a change of the project, minutes for the Debian base the first time).
 * It is the longest e2e case, so package.json starts it first, beside all the others. Needs root
 * (taps, the bridge, mmdebstrap), qemu-system-x86_64 and mmdebstrap; skipped without them.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { ClusterKms, readMasterSecret } from '../../src/lib/kms/index.js'
import { miniDown } from '../../src/lib/mini/down.js'
import { CLUSTER_MARKER, markedProcesses } from '../../src/lib/mini/daemons.js'
import { miniPaths, readMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import { vmNodeFiles } from '../../src/lib/mini/vm-node.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { createRunner } from '../../src/lib/system/index.js'
import { VM_FIRMWARE_PCRS } from '../../src/lib/vm/firmware.js'
import { guestExec } from '../../src/lib/vm/guest-agent.js'
import { runMiniExec } from '../../src/wiring/mini-exec.js'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'

const has = (program: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const runnable = process.getuid?.() === 0 && has('qemu-system-x86_64') && has('mmdebstrap')
const runner = createRunner()

/** The command's stderr, indented into the test's own (minutes of progress worth seeing), and that it succeeded. */
function expectSucceeded(res: { code: number | null; stderr: string; stdout: string }) {
  process.stderr.write(
    res.stderr
      .split('\n')
      .map((l) => `  | ${l}`)
      .join('\n') + '\n',
  )
  expect(res.code, res.stderr + res.stdout).to.equal(0)
}

/**
 * This test's temp folders: a run killed half way leaves one, which the next run's `before` sweeps.
 * Each names the test process that owns it, so that a run beside this one (the suite run twice at
 * once) keeps its cluster: only a folder whose owner is gone is swept.
 */
const TEMP_PREFIX = 'constell-minivm-'
const OWNER_FILE = 'owner-pid'
const UP_MS = 40 * 60_000
const REBOOT_MS = 20 * 60_000

const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** mini down for every cluster a killed run of this test left (its VMs, taps, bridge, files). */
async function sweepLeftovers() {
  for (const entry of await readdir(os.tmpdir())) {
    if (!entry.startsWith(TEMP_PREFIX)) continue
    const dir = path.join(os.tmpdir(), entry)
    const owner = Number(await readFile(path.join(dir, OWNER_FILE), 'utf8').catch(() => ''))
    if (owner > 0 && processAlive(owner)) continue // another run's, still going
    const ws = path.join(dir, 'ws')
    if (await readMiniRecord(ws).catch(() => undefined))
      await miniDown(ws, runner, { purge: true }).catch(() => undefined)
    await rm(dir, { recursive: true, force: true })
  }
}

/** Everything of the cluster that could outlive `mini down`. */
async function leftovers(record: MiniRecord, workspace: string): Promise<string[]> {
  const found: string[] = []
  for (const pid of await markedProcesses(CLUSTER_MARKER, record.network.id)) found.push(`process ${pid}`)
  if ((await runner.run('ip', ['-o', 'link', 'show'])).stdout.includes(`cst${record.network.id}`))
    found.push('links')
  if ((await readFile('/proc/mounts', 'utf8')).includes(workspace)) found.push('mounts')
  if (
    await stat(path.join(workspace, 'constellation-mini')).then(
      () => true,
      () => false,
    )
  )
    found.push('the cluster folder')
  return found
}

describe('mini up --machines vm: 1 control plane + 1 worker as QEMU VMs', function () {
  this.timeout(UP_MS + 2 * REBOOT_MS + 10 * 60_000)
  let dir: string
  let ws: string
  let record: MiniRecord | undefined
  const times: Record<string, number> = {}
  const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const started = Date.now()
    try {
      return await fn()
    } finally {
      const seconds = (Date.now() - started) / 1000
      times[what] = seconds
      process.stderr.write(`  ${what}: ${seconds.toFixed(1)} s\n`)
    }
  }
  /** A command on a node through `mini exec` (the CLI); fails on a non-zero exit. */
  const miniExec = async (node: string, ...argv: string[]) => {
    const res = await runCli(['mini', 'exec', node, '-C', ws, '--', ...argv], { timeoutMs: 120_000 })
    expect(res.code, `mini exec ${node} -- ${argv.join(' ')}: ${res.stderr}`).to.equal(0)
    return res.stdout
  }
  const sh = async (node: string, script: string) => {
    const r = await runMiniExec(ws, node, ['/bin/sh', '-c', script])
    expect(r.exitCode, `${node}: ${script}: ${r.stdout}${r.stderr}`).to.equal(0)
    return r.stdout
  }
  const agent = (node: string) => vmNodeFiles(miniPaths(ws).node(node).dir).sockets.guestAgent
  const pcr = async (node: string, index: number) =>
    new RegExp(`${index}\\s*:\\s*0x([0-9A-F]{64})`, 'i')
      .exec(await sh(node, `tpm2_pcrread sha256:${index}`))?.[1]
      ?.toLowerCase()
  const bootId = async (node: string) => (await sh(node, 'cat /proc/sys/kernel/random/boot_id')).trim()
  const DATA = `written before the reboots: ${randomBytes(16).toString('hex')}`

  /** /run/state is the mapping of the state disk, opened with the key derived for the recorded disk. */
  async function expectMappedWithJoinKey(node: string) {
    const device = (await sh(node, 'readlink -f /dev/disk/by-id/virtio-state')).trim()
    const status = await miniExec(node, 'cryptsetup', 'status', 'state')
    expect(status).to.match(/type:\s+LUKS2/)
    expect(status).to.match(/integrity:\s+hmac\(sha256\)/)
    expect(status).to.match(/sector size:\s+4096/)
    expect(status).to.match(new RegExp(`device:\\s+${device}\\n`))
    expect(await sh(node, 'findmnt -n -o SOURCE /run/state')).to.equal('/dev/mapper/state\n')
    // dm-crypt over dm-integrity: the mapping's table names both targets
    const table = await miniExec(node, 'dmsetup', 'table')
    expect(table).to.match(/^state: 0 \d+ crypt \S*hmac\(sha256\)\S* .* integrity:\d+:aead/m)
    expect(table).to.match(/^\S+: 0 \d+ integrity /m)
    const uuid = (await sh(node, 'cryptsetup luksUUID /dev/disk/by-id/virtio-state')).trim()
    // the join service's record of the disk (a ConfigMap in the SIMULATED API's folder on the host)
    const recordFile = path.join(
      miniPaths(ws).apiDir,
      'namespaces/kube-system/configmaps',
      `constellation-state-disk-${uuid}.json`,
    )
    const diskRecord = JSON.parse(await readFile(recordFile, 'utf8')) as { data: Record<string, string> }
    expect(diskRecord.data).to.include({ node, role: 'worker' })
    // the key the join service hands out for that disk opens its keyslot (on stdin, never in argv)
    const master = await readMasterSecret(workspacePaths(ws).masterSecret)
    const key = new ClusterKms(master!.key, master!.salt).diskKey(uuid)
    const test = [
      'cryptsetup',
      'open',
      '--test-passphrase',
      '--key-file',
      '-',
      '/dev/disk/by-id/virtio-state',
    ]
    expect((await guestExec(agent(node), test, { input: key })).exitCode).to.equal(0)
    expect((await guestExec(agent(node), test, { input: randomBytes(32) })).exitCode).to.not.equal(0)
    return uuid
  }

  before(async function () {
    if (!runnable) this.skip()
    await sweepLeftovers()
    dir = await mkdtemp(path.join(os.tmpdir(), TEMP_PREFIX))
    await writeFile(path.join(dir, OWNER_FILE), String(process.pid))
    ws = path.join(dir, 'ws')
  })

  after(async function () {
    if (!runnable) return
    process.stderr.write(`  times (s): ${JSON.stringify(times)}\n`)
    if (record) {
      const down = await runCli(['mini', 'down', '--purge', '-C', ws], { timeoutMs: 5 * 60_000 })
      expect(down.code, down.stderr + down.stdout).to.equal(0)
      expect(await leftovers(record, ws)).to.deep.equal([])
    }
    await rm(dir, { recursive: true, force: true })
  })

  let diskUuid: string

  it('mini up: both VMs boot, init and the join run over aTLS, the worker maps its disk with the join key', async () => {
    const up = await timed('mini up', () =>
      runCli(['mini', 'up', '-C', ws, '--machines', 'vm', '--workers', '1', '--skip-helm', '--json'], {
        timeoutMs: UP_MS,
      }),
    )
    record = await readMiniRecord(ws)
    expectSucceeded(up)
    expect(up.stderr).to.include('Kubernetes is SIMULATED')
    const json = JSON.parse(up.stdout) as {
      simulated: string
      machines: string
      nodes: Array<{ name: string }>
      status: { nodes: Array<{ name: string }> }
    }
    expect(json.simulated).to.match(/^Kubernetes is SIMULATED/)
    expect(json.machines).to.equal('vm')
    expect(json.nodes.map((n) => n.name)).to.deep.equal(['control-plane-0', 'worker-0'])
    process.stderr.write(`  status: ${JSON.stringify(json.status)}\n`)

    // the firmware measured what the config expects (vm/firmware.ts), and the node lock is taken
    for (const [index, expected] of VM_FIRMWARE_PCRS)
      expect(await pcr('worker-0', index), `worker-0's PCR ${index}`).to.equal(expected)
    expect(await pcr('worker-0', 15)).to.not.equal('0'.repeat(64))
    expect(await sh('worker-0', 'systemctl is-active constellation-bootstrapper')).to.equal('active\n')
    // Debian's housekeeping stays off (vm/image.ts): e2scrub_reap alone took a minute of every boot
    expect(
      await sh('worker-0', 'systemctl is-enabled e2scrub_reap.service e2scrub_all.timer || true'),
    ).to.equal('masked\nmasked\n')
    // and it booted from an initramfs of the root disk's modules alone (vm/image-recipe.ts)
    expect(await sh('worker-0', 'cat /etc/initramfs-tools/conf.d/constellation-vm')).to.equal(
      'MODULES=list\n',
    )

    diskUuid = await expectMappedWithJoinKey('worker-0')
    // formatted as production must (wiped through the mapping): every sector reads back, none fails
    // its integrity check, as never-written sectors of an --integrity-no-wipe format would
    await sh('worker-0', 'dd if=/dev/mapper/state of=/dev/null bs=1M status=none')
    await sh('worker-0', `printf '%s' '${DATA}' > /run/state/mini-e2e-data && sync`)
    // the control plane serves its join service, the worker joined through it
    const logs = await runCli(['mini', 'logs', 'worker-0', 'console', '-C', ws], { timeoutMs: 60_000 })
    expect(logs.stdout).to.match(/Started constellation-bootstrapper\.service/)
  })

  it('mini reboot (QEMU reset): PCRs reset, the disk kept, it rejoins with its data intact', async function () {
    if (!diskUuid) this.skip()
    const before = await bootId('worker-0')
    const lockBefore = await pcr('worker-0', 15)
    const res = await timed('reset and rejoin', () =>
      runCli(['mini', 'reboot', 'worker-0', '-C', ws, '--timeout', '20m'], { timeoutMs: REBOOT_MS }),
    )
    expectSucceeded(res)
    expect(res.stderr).to.include('Kubernetes is SIMULATED')
    expect(await bootId('worker-0')).to.not.equal(before)
    // the same disk, opened again with the key the join service handed out for it
    expect(await expectMappedWithJoinKey('worker-0')).to.equal(diskUuid)
    expect(await sh('worker-0', 'cat /run/state/mini-e2e-data')).to.equal(DATA)
    // the reset re-initialised the TPM: PCR 15 started from zero again and holds the cluster ID
    // extended once, as before (not reset, it would have been extended twice: another value)
    expect(await pcr('worker-0', 15)).to.equal(lockBefore)
  })

  it('mini reboot --hard (QEMU and swtpm killed): it comes back with its data', async function () {
    if (!diskUuid) this.skip()
    await sh('worker-0', `printf '%s' '${DATA} again' > /run/state/mini-e2e-data-2 && sync`)
    const before = await bootId('worker-0')
    const res = await timed('power cut and rejoin', () =>
      runCli(['mini', 'reboot', 'worker-0', '--hard', '-C', ws, '--timeout', '20m'], {
        timeoutMs: REBOOT_MS,
      }),
    )
    expectSucceeded(res)
    expect(await bootId('worker-0')).to.not.equal(before)
    expect(await expectMappedWithJoinKey('worker-0')).to.equal(diskUuid)
    expect(await sh('worker-0', 'cat /run/state/mini-e2e-data /run/state/mini-e2e-data-2')).to.equal(
      `${DATA}${DATA} again`,
    )
  })
})
