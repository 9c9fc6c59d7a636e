/**
 * One node of a local cluster, provisioned as a machine image would be (its folders, an empty disk
 * image, its config, the project's systemd units) and powered on and off. Powered on, a node is its
 * supervisor (supervisor.ts, its "systemd"), which brings up its TPM (swtpm) and runs its units:
 * `state-disk setup`, then `bootstrap run` and the verification service; control planes' key and
 * join services are started by `bootstrap run` through systemctl (the simulator's systemctl, which
 * asks the supervisor), or at boot once the master secret is on the node.
 */
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { open } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { cvmKind, type AttestationVariant } from '../attestation/index.js'
import { ATTESTATION_CONFIG_KEYS } from '../config/index.js'
import type { NodeConfig } from '../nodeconfig/index.js'
import { nodePaths } from '../paths.js'
import { writeSecretFile, type Runner } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { alive, CLUSTER_MARKER, markedProcesses, NODE_MARKER, startDaemon, stopMarked } from './daemons.js'
import { checkMiniVariant, type MiniCvmVariant } from './cvm.js'
import {
  METADATA_PORT,
  MINI_KEYSLOT_PBKDF,
  NODE_PORTS,
  type MiniNodeFiles,
  type MiniNodeRecord,
  type MiniPaths,
} from './layout.js'
import { SUPERVISOR_MARKER, type MachineSpec } from './machine.js'
import { launcherScript } from './measured-boot.js'
import type { MiniNetwork } from './network.js'
import { kubeletUnitFor } from '../simulator/index.js'

/** Big enough for a LUKS2 header (16 MiB) and its tokens; nothing is written past it (no mapping). */
const DISK_BYTES = 32 * 1024 * 1024

export interface NodeBootContext {
  network: MiniNetwork
  runner: Runner
  /** argv that runs this CLI (node + bin/run.js). */
  cli: readonly string[]
  /** The project's systemd unit templates, the simulator's kubelet unit and mini's own units. */
  unitTemplates: string
  kubeletUnit: string
  miniUnits: string
  /** argv that runs a node's supervisor (node + dist/mini-node.js). */
  supervisor: readonly string[]
  /** The environment every node process gets (markers, the simulator's variables, PATH). */
  env: NodeJS.ProcessEnv
  attestation: MiniAttestation
}

/**
 * How the cluster's nodes attest; tpm-ek's join services check EK certificates against `roots`; a
 * CVM variant's join services get its config section (`section`, absolute paths) and every node's
 * supervisor serves reports signed with the stand-in's keys (`standInKeys`).
 */
export type MiniAttestation =
  | { variant: 'qemu-vtpm' }
  | { variant: 'tpm-ek'; roots: string[] }
  | { variant: MiniCvmVariant; standInKeys: string; section: Record<string, unknown> }

/** `section` is known once `mini up` made the stand-in; a reboot provisions nothing and needs none. */
export function miniAttestation(
  variant: AttestationVariant,
  paths: Pick<MiniPaths, 'tpmCa' | 'cvmStandIn'>,
  section: Record<string, unknown> = {},
): MiniAttestation {
  if (variant === 'tpm-ek') return { variant, roots: [paths.tpmCa.issuerCert] }
  if (variant === 'qemu-vtpm') return { variant }
  checkMiniVariant(variant)
  return { variant, standInKeys: paths.cvmStandIn.keys, section }
}

const cvmOf = (a: MiniAttestation) => ('standInKeys' in a ? a : undefined)

export const nodeMarker = (clusterId: string, node: string) => `${clusterId}/${node}`

/** The node config mini gives node `n`: its address for every service, metadata from the host. */
export function miniNodeConfig(
  network: MiniNetwork,
  node: MiniNodeRecord,
  files: MiniNodeFiles,
  attestation: MiniAttestation = { variant: 'qemu-vtpm' },
): NodeConfig {
  const at = (port: number) => `${node.address}:${port}`
  return {
    attestationVariant: attestation.variant,
    ...(attestation.variant === 'tpm-ek' && { attestation: { tpmEK: { roots: attestation.roots } } }),
    ...('section' in attestation && {
      attestation: { [ATTESTATION_CONFIG_KEYS[attestation.variant]]: attestation.section },
    }),
    // the node's alone: a port on a loopback address would let every user of the host in
    tpm: { swtpm: `unix:${files.sockets.swtpm}` },
    root: files.root,
    initServer: { listen: at(NODE_PORTS.init) },
    verifyService: { listen: at(NODE_PORTS.verify) },
    joinService: { listen: at(NODE_PORTS.join) },
    keyService: { listen: `unix:${files.sockets.keyService}` },
    recoveryServer: { listen: at(NODE_PORTS.recovery) },
    kubeconfig: path.join(files.root, 'etc/kubernetes/admin.conf'),
    kubeadm: path.join(files.root, 'run/state/bin/kubeadm'),
    stateDisk: { device: files.disk, pbkdf: MINI_KEYSLOT_PBKDF },
    metadata: {
      provider: 'http',
      url: `http://${network.hostAddress}:${METADATA_PORT}`,
      ...(network.mode === 'loopback' ? { sourceAddress: node.address } : {}),
    },
  }
}

/** A new machine: its folders, an empty disk image, its config and its systemd units. */
export async function provisionNode(
  ctx: NodeBootContext,
  node: MiniNodeRecord,
  files: MiniNodeFiles,
): Promise<void> {
  const cvm = cvmOf(ctx.attestation)
  const tsm = nodePaths(files.root).tsmReport
  for (const dir of [files.root, files.tpmState, files.units, files.unitState, ...(cvm ? [tsm] : [])])
    await mkdir(dir, { recursive: true, mode: 0o700 })
  const disk = await open(files.disk, 'wx', 0o600)
  await disk.truncate(DISK_BYTES)
  await disk.close()
  const config = stringifyYaml(miniNodeConfig(ctx.network, node, files, ctx.attestation))
  await writeSecretFile(files.config, config, 'replace')
  await renderUnits(ctx, files)
  const spec: MachineSpec = {
    ...machineSpec(node, files),
    boot: {
      launcher: launcherFile(files),
      unitTemplates: ctx.unitTemplates,
      eventLog: nodePaths(files.root).tpmEventLog,
    },
    ...(cvm && {
      cvm: { kind: cvmKind(cvm.variant), tsmDir: tsm, standInDir: cvm.standInKeys },
    }),
  }
  await writeSecretFile(files.machine, JSON.stringify(spec, null, 2) + '\n', 'replace')
}

/** The units whose output goes to the node's folder (the rest: systemd/state/UNIT.log, "the journal"). */
export const UNIT_LOGS = {
  'constellation-state-disk.service': 'state-disk',
  'constellation-bootstrapper.service': 'bootstrap',
  'constellation-verifyservice.service': 'verifyservice',
} as const

/** What the node's supervisor runs: its TPM, its units, where their output goes, what /run holds. */
function machineSpec(node: MiniNodeRecord, files: MiniNodeFiles): MachineSpec {
  const paths = nodePaths(files.root)
  return {
    node: node.name,
    tpm: {
      stateDir: files.tpmState,
      socket: files.sockets.swtpm,
      ctrlSocket: files.sockets.swtpmCtrl,
      log: files.log('swtpm'),
    },
    unitDir: files.units,
    journalDir: files.unitState,
    unitLogs: Object.fromEntries(Object.entries(UNIT_LOGS).map(([unit, log]) => [unit, files.log(log)])),
    status: files.bootStatus,
    control: files.sockets.systemd,
    // memory-backed on a machine: gone at power-off (the state disk's mount point, run/state, is not)
    volatile: [paths.runtimeDir, path.dirname(paths.stateDiskInitialKeyFile)],
  }
}

const launcherFile = (files: MiniNodeFiles) => path.join(files.dir, 'constellation')

/** The project's units with this node's CLI, config and root, as the image would install them. */
async function renderUnits(ctx: NodeBootContext, files: MiniNodeFiles): Promise<void> {
  const launcher = launcherFile(files)
  await writeFile(launcher, launcherScript(ctx.cli))
  await chmod(launcher, 0o755)
  for (const dir of [ctx.unitTemplates, ctx.miniUnits])
    for (const unit of await readdir(dir)) {
      const text = (await readFile(path.join(dir, unit), 'utf8'))
        .replaceAll('/usr/bin/constellation', launcher)
        .replaceAll('/etc/constellation/node-config.yaml', files.config)
        .replaceAll('/var/config/', path.join(files.root, 'var/config') + '/')
        // no device-mapper here: the key is checked, the disk is not mapped (simulated-mounter.ts)
        .replace(/^(ExecStart=\S+ state-disk setup .*)$/m, '$1 --simulate-mapping')
      await writeFile(path.join(files.units, unit), text)
    }
  await writeFile(
    path.join(files.units, 'kubelet.service'),
    await kubeletUnitFor(ctx.kubeletUnit, files.root),
  )
}

/** One power-on of a node: its supervisor, and where its logs stood before (what is new is this boot's). */
export interface NodeBoot {
  node: MiniNodeRecord
  files: MiniNodeFiles
  bootId: string
  supervisorPid: number
  /** Sizes of the node's logs at power-on. */
  logStart: Record<string, number>
}

/**
 * Powers the node on: starts its supervisor, detached and marked, which outlives the command that
 * started it (Ctrl-C or a timeout in it leave the node booting). Resolves at once; watch the boot
 * with boot-watch.ts.
 */
export async function powerOnNode(
  ctx: NodeBootContext,
  node: MiniNodeRecord,
  files: MiniNodeFiles,
  clusterId: string,
): Promise<NodeBoot> {
  const marker = nodeMarker(clusterId, node.name)
  const logStart: Record<string, number> = {}
  for (const log of Object.values(UNIT_LOGS))
    logStart[log] = await stat(files.log(log)).then(
      (s) => s.size,
      () => 0,
    )
  const bootId = randomBytes(8).toString('hex')
  const supervisor = startDaemon({
    argv: [
      ...ctx.network.execPrefix(node.index),
      ...ctx.supervisor,
      '--machine',
      files.machine,
      '--boot-id',
      bootId,
    ],
    env: {
      ...ctx.env,
      [CLUSTER_MARKER]: clusterId,
      [NODE_MARKER]: marker,
      [SUPERVISOR_MARKER]: marker,
      SYSTEMCTL_FAKE_UNIT_DIR: files.units,
      SYSTEMCTL_FAKE_STATE_DIR: files.unitState,
    },
    logFile: files.log('supervisor'),
  })
  return { node, files, bootId, supervisorPid: supervisor.pid, logStart }
}

/** A node's supervisor gets this long to stop its units and its TPM in order (units: 15 s each at most). */
export const ORDERLY_POWER_OFF_MS = 45_000

/**
 * Powers the node off. In order (the default): its supervisor stops every unit, sends
 * TPM2_Shutdown and stops swtpm, as an operating system shuts a machine down; what is left then
 * (or everything, when no supervisor runs) is stopped as by `mini down`. `hard`: a power cut, every
 * process of the node SIGKILLed at once, the TPM without a shutdown. Either way the disk image,
 * the TPM's state and the state disk's content stay; /run is emptied at the next power-on.
 */
export async function powerOffNode(
  clusterId: string,
  node: string,
  opts: { hard?: boolean } = {},
): Promise<{ orderly: boolean }> {
  const marker = nodeMarker(clusterId, node)
  if (opts.hard) {
    await stopMarked(NODE_MARKER, marker, 0)
    return { orderly: false }
  }
  const supervisors = await markedProcesses(SUPERVISOR_MARKER, marker)
  for (const pid of supervisors)
    try {
      process.kill(pid, 'SIGTERM')
    } catch {
      // gone already: the sweep below finds what it left
    }
  const deadline = Date.now() + ORDERLY_POWER_OFF_MS
  while (supervisors.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  const orderly = supervisors.length > 0 && !supervisors.some(alive)
  await stopMarked(NODE_MARKER, marker)
  return { orderly }
}
