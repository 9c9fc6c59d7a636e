/**
 * A mini node as a QEMU virtual machine (`--machines vm`): the image's systemd runs the project's
 * units unchanged, `state-disk setup` maps the state disk with dm-crypt and dm-integrity, the TPM
 * is swtpm behind the guest's /dev/tpmrm0, and the node reaches the host's metadata service and
 * the other nodes over the cluster's bridge, from its own address. Its files sit in the node's
 * folder: a copy-on-write overlay over the cached image, the state disk, the TPM's state, the
 * serial console's log and the sockets of QEMU's monitor and guest agent.
 */
import { mkdir, open, rm } from 'node:fs/promises'
import path from 'node:path'
import type { NodeConfig } from '../nodeconfig/index.js'
import { writeSecretFile, type Runner } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'
import {
  GUEST_STATE_DISK,
  qemuArgs,
  qmpCommand,
  swtpmArgs,
  vmMac,
  type ImageFiles,
  type VmSimulatorSpec,
  guestExec,
} from '../vm/index.js'
import { CLUSTER_MARKER, NODE_MARKER, startDaemon, stopMarked, markedProcesses, alive } from './daemons.js'
import { METADATA_PORT, MINI_KEYSLOT_PBKDF, NODE_PORTS, type MiniNodeRecord } from './layout.js'
import { tapName, type MiniNetwork } from './network.js'
import { logTail, waitForFile, waitForSocket } from './wait.js'
import {
  NodeBootFailedError,
  NodeBootInterruptedError,
  NodeBootTimeoutError,
  type BootWatchOptions,
} from './boot-watch.js'

/**
 * A state disk big enough for LUKS2 (16 MiB header) with dm-integrity's tags and journal, and a
 * small ext4 for what a mini node keeps there (its node state, the simulator's launchers). Small on
 * purpose: a fresh disk is wiped through the mapping at format (every sector written once, so that
 * none fails its integrity check), which costs seconds per MiB on one emulated vCPU.
 */
export const VM_STATE_DISK_BYTES = 64 * 1024 * 1024
export const VM_MEMORY_MIB = 1024

export function vmNodeFiles(dir: string) {
  return {
    dir,
    rootOverlay: path.join(dir, 'root.qcow2'),
    stateDisk: path.join(dir, 'state-disk.img'),
    tpmState: path.join(dir, 'tpm'),
    nodeConfig: path.join(dir, 'node-config.yaml'),
    consoleLog: path.join(dir, 'console.log'),
    qemuLog: path.join(dir, 'qemu.log'),
    swtpmLog: path.join(dir, 'swtpm.log'),
    sockets: {
      swtpmCtrl: path.join(dir, 'swtpm-ctrl.sock'),
      qmp: path.join(dir, 'qmp.sock'),
      guestAgent: path.join(dir, 'qga.sock'),
    },
  }
}
export type VmNodeFiles = ReturnType<typeof vmNodeFiles>

/**
 * The node config a VM node gets (through fw_cfg): production paths on its own root, its TPM
 * device, its state disk by serial, metadata from the host's service on the bridge.
 */
export function vmNodeConfig(network: MiniNetwork, node: MiniNodeRecord): NodeConfig {
  const at = (port: number) => `${node.address}:${port}`
  return {
    attestationVariant: 'qemu-vtpm',
    tpm: { device: '/dev/tpmrm0' },
    root: '/',
    initServer: { listen: at(NODE_PORTS.init) },
    verifyService: { listen: at(NODE_PORTS.verify) },
    joinService: { listen: at(NODE_PORTS.join) },
    keyService: { listen: 'unix:/run/constellation/keyservice.sock' },
    recoveryServer: { listen: at(NODE_PORTS.recovery) },
    kubeconfig: '/etc/kubernetes/admin.conf',
    kubeadm: '/run/state/bin/kubeadm',
    // production's format (dm-crypt over dm-integrity, wiped), which the guest maps for real; the
    // keyslots' PBKDF as on every mini node: argon2id's 2 s per keyslot, benchmarked first, took
    // about 45 s of each emulated boot (its arguments are checked against cryptsetup in test/statedisk)
    stateDisk: { device: GUEST_STATE_DISK, pbkdf: MINI_KEYSLOT_PBKDF },
    metadata: { provider: 'http', url: `http://${network.hostAddress}:${METADATA_PORT}` },
  }
}

export interface VmBootContext {
  network: MiniNetwork
  runner: Runner
  image: ImageFiles
  env: NodeJS.ProcessEnv
  clusterId: string
  accel: 'tcg' | 'kvm'
  /**
   * Kubernetes SIMULATED: the API simulator's folder and admin kubeconfig on the host, and where it
   * listens (control planes forward the API's port there).
   */
  simulator?: { apiDir: string; adminKubeconfig: string; listen: string }
}

/** What the guest gets of the simulator: every node its folder, control planes its port. */
function simulatorFor(ctx: VmBootContext, node: MiniNodeRecord): VmSimulatorSpec | undefined {
  if (!ctx.simulator) return undefined
  const { apiDir, adminKubeconfig, listen } = ctx.simulator
  return { apiDir, adminKubeconfig, ...(node.role === 'control-plane' && { upstream: listen }) }
}

/** A new machine: an overlay over the image, an empty state disk, its TPM folder and config (its tap: network.addTap). */
export async function provisionVmNode(ctx: VmBootContext, node: MiniNodeRecord, files: VmNodeFiles) {
  await mkdir(files.tpmState, { recursive: true, mode: 0o700 })
  await ctx.runner.run('qemu-img', [
    'create',
    '-q',
    '-f',
    'qcow2',
    '-b',
    ctx.image.rootDisk,
    '-F',
    'raw',
    files.rootOverlay,
  ])
  const disk = await open(files.stateDisk, 'wx', 0o600)
  await disk.truncate(VM_STATE_DISK_BYTES)
  await disk.close()
  await writeSecretFile(files.nodeConfig, stringifyYaml(vmNodeConfig(ctx.network, node)), 'replace')
}

const vmMarker = (clusterId: string, node: string) => `${clusterId}/${node}`

/**
 * Powers the VM on: its swtpm, then QEMU, both detached and marked as the node's (so `mini down`
 * and a power cut find them). Resolves once QEMU runs; the guest boots on its own from there.
 */
export async function powerOnVmNode(ctx: VmBootContext, node: MiniNodeRecord, files: VmNodeFiles) {
  const env = {
    ...ctx.env,
    [CLUSTER_MARKER]: ctx.clusterId,
    [NODE_MARKER]: vmMarker(ctx.clusterId, node.name),
  }
  // a power cut leaves its sockets' files behind: the next QEMU and swtpm make them anew
  for (const socket of Object.values(files.sockets)) await rm(socket, { force: true })
  startDaemon({
    argv: [
      'swtpm',
      ...swtpmArgs({ stateDir: files.tpmState, ctrlSocket: files.sockets.swtpmCtrl, log: files.swtpmLog }),
    ],
    env,
    logFile: files.swtpmLog,
  })
  // its socket file, not a connection: swtpm --terminate ends when its first control client leaves
  await waitForFile(files.sockets.swtpmCtrl, { what: `${node.name}'s swtpm`, log: files.swtpmLog })
  const qemu = startDaemon({
    argv: [
      'qemu-system-x86_64',
      ...qemuArgs({
        name: node.name,
        image: ctx.image,
        rootOverlay: files.rootOverlay,
        stateDisk: files.stateDisk,
        memoryMiB: VM_MEMORY_MIB,
        cpus: 1,
        accel: ctx.accel,
        sockets: files.sockets,
        consoleLog: files.consoleLog,
        tap: tapName(ctx.network.id, node.index),
        mac: vmMac(ctx.network.id, node.index),
        address: `${node.address}/24`,
        nodeConfigFile: files.nodeConfig,
        simulator: simulatorFor(ctx, node),
      }),
    ],
    env,
    logFile: files.qemuLog,
  })
  await waitForSocket(files.sockets.qmp, { what: `${node.name}'s QEMU`, log: files.qemuLog })
  return { qemuPid: qemu.pid }
}

/** How long a QEMU told to quit, and its swtpm, get before they are killed. */
const VM_QUIT_MS = 30_000

/**
 * A reset, as the machine's reset button: the guest's kernel gets no say, the TPM is re-initialised
 * (PCRs reset, no TPM2_Shutdown) and the disks keep what the guest had written to them. Done as a
 * restart of QEMU, not QMP system_reset: after system_reset, QEMU 7.2's TCG ran the guest about 3×
 * slower (the kernel's part of a boot 10.9 → 35.6 s, the whole boot 35.5 → 67.4 s, measured on one
 * VM alone). `quit` closes the disks in order and ends swtpm (--terminate); a new QEMU and swtpm
 * start from the same files, as at power on.
 */
export async function resetVmNode(ctx: VmBootContext, node: MiniNodeRecord, files: VmNodeFiles) {
  const marker = vmMarker(ctx.clusterId, node.name)
  const pids = await markedProcesses(NODE_MARKER, marker)
  // QEMU may end before it answers `quit`: its processes' end is the answer that counts
  await qmpCommand(files.sockets.qmp, 'quit').catch(() => undefined)
  await endVm(marker, pids, VM_QUIT_MS)
  await powerOnVmNode(ctx, node, files)
}

/**
 * Gives the node's QEMU and swtpm (`pids`, read before they were told to stop) up to `waitMs` to
 * end on their own, then kills whatever of the node is left; true when they had ended in time.
 */
async function endVm(marker: string, pids: number[], waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
  const ended = !pids.some(alive)
  await stopMarked(NODE_MARKER, marker, 0)
  return ended
}

/** A power cut: QEMU and swtpm SIGKILLed at once, no TPM2_Shutdown, caches lost. */
export const powerCutVmNode = (clusterId: string, node: string) =>
  stopMarked(NODE_MARKER, vmMarker(clusterId, node), 0)

/** How long the guest gets to shut down after the ACPI power button. */
export const VM_POWER_OFF_MS = 60_000

/** ACPI power button, as a hypervisor shuts a VM down; a power cut when it did not stop in time. */
export async function powerOffVmNode(clusterId: string, node: string, files: VmNodeFiles) {
  const marker = vmMarker(clusterId, node)
  const pids = await markedProcesses(NODE_MARKER, marker)
  const orderly = await qmpCommand(files.sockets.qmp, 'system_powerdown').then(
    () => true,
    () => false,
  )
  const ended = await endVm(marker, pids, orderly ? VM_POWER_OFF_MS : 0)
  return { orderly: orderly && ended }
}

/** Names, addresses and configures the machine; without it the node's units never start (their conditions fail). */
const VM_GUEST_UNIT = 'constellation-vm-guest.service'
const STATE_DISK_UNIT = 'constellation-state-disk.service'
const BOOTSTRAPPER_UNIT = 'constellation-bootstrapper.service'
/** How often the guest is asked; each ask is a guest-exec of systemctl on one emulated vCPU. */
const VM_POLL_MS = 3_000

/** `systemctl show` of units: each unit's properties, units apart by an empty line. */
export function parseUnitStates(text: string): Array<Record<string, string>> {
  return text
    .trim()
    .split(/\n\s*\n/)
    .map((block) =>
      Object.fromEntries(
        block
          .split('\n')
          .map((line) => line.split('='))
          .filter((kv) => kv.length >= 2)
          .map(([k, ...v]) => [k!.trim(), v.join('=').trim()]),
      ),
    )
}

/**
 * Watches a VM boot from the host, through its guest agent (the guest's systemd is the truth):
 * resolves once `bootstrap run` is done in this boot (its unit active, its process exited); rejects
 * when the guest setup, state-disk setup or the bootstrapper failed, when QEMU is gone, at the
 * deadline, or on `opts.signal`. The guest keeps booting whatever happens to the wait.
 */
export async function waitUntilVmBooted(
  clusterId: string,
  node: MiniNodeRecord,
  files: VmNodeFiles,
  opts: BootWatchOptions,
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs
  let waitingFor = 'the machine to boot (its guest agent)'
  const said = new Set<string>()
  const say = (line: string) => {
    if (!opts.announceWaits || said.has(line)) return
    said.add(line)
    opts.progress?.(`${node.name}: waiting for ${line}`)
  }
  const journal = async (unit: string) =>
    (
      await guestExec(
        files.sockets.guestAgent,
        ['journalctl', '-b', '-u', unit, '-o', 'cat', '-n', '15', '--no-pager'],
        {
          timeoutMs: 30_000,
        },
      ).catch((err: unknown) => ({ stdout: `(its journal: ${String(err)})` }))
    ).stdout
  for (;;) {
    if (opts.signal?.aborted)
      throw new NodeBootInterruptedError(
        node.name,
        waitingFor,
        opts.signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT',
      )
    if ((await markedProcesses(NODE_MARKER, vmMarker(clusterId, node.name))).length === 0)
      throw new NodeBootFailedError(
        `${node.name} went off while booting: its QEMU is gone (powered off by another command, or it crashed)\n${await logTail(files.qemuLog)}\n${await logTail(files.consoleLog)}`,
      )
    const shown = await guestExec(
      files.sockets.guestAgent,
      [
        'systemctl',
        'show',
        '-p',
        'ActiveState',
        '-p',
        'SubState',
        VM_GUEST_UNIT,
        STATE_DISK_UNIT,
        BOOTSTRAPPER_UNIT,
      ],
      { timeoutMs: 30_000 },
    ).catch(() => undefined)
    if (shown?.exitCode === 0) {
      const [guest, disk, bootstrapper] = parseUnitStates(shown.stdout)
      for (const [unit, state] of [
        [VM_GUEST_UNIT, guest],
        [STATE_DISK_UNIT, disk],
        [BOOTSTRAPPER_UNIT, bootstrapper],
      ] as const)
        if (state?.ActiveState === 'failed')
          throw new NodeBootFailedError(`${node.name}'s ${unit} failed; its journal:\n${await journal(unit)}`)
      if (bootstrapper?.ActiveState === 'active' && bootstrapper.SubState === 'exited') return
      waitingFor =
        disk?.ActiveState === 'active'
          ? opts.rebooted
            ? 'bootstrap run to start its services again'
            : 'bootstrap run (init or join)'
          : `state-disk setup${opts.rebooted ? ' (its disk key from a join service, or ' + opts.recoverCommand + ')' : ''}`
      say(waitingFor)
    }
    if (Date.now() > deadline) {
      const err = new NodeBootTimeoutError(node.name, waitingFor, opts.timeoutMs)
      err.message += `\nits bootstrapper's journal:\n${await journal(BOOTSTRAPPER_UNIT)}\nstate-disk setup's:\n${await journal(STATE_DISK_UNIT)}`
      throw err
    }
    await new Promise((r) => setTimeout(r, VM_POLL_MS))
  }
}
