/**
 * `mini up` and `mini down`: a cluster of real node software on this machine, with Kubernetes
 * SIMULATED by the project's contract fakes (simulator/). What is real: swtpm TPMs, attestation,
 * aTLS, key derivation, LUKS2 headers, join tickets, certificates, the Helm releases. What is
 * simulated: the Kubernetes API, kubeadm, systemctl and the kubelet, and the state disk's mapping.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { cvmKind, isCvmVariant, type AttestationVariant } from '../attestation/index.js'
import {
  ATTESTATION_CONFIG_KEYS,
  generateWorkspace,
  initSecretHashFor,
  loadConfig,
  PROVIDER_VARIANTS,
  PROVIDERS,
} from '../config/index.js'
import { CliError } from '../errors/index.js'
import { workspacePaths } from '../paths.js'
import {
  counted,
  exists,
  SIGNAL_EXIT_CODES,
  writeSecretFile,
  unixAddressProblem,
  type InterruptSignal,
  type Runner,
} from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { CLUSTER_MARKER, startDaemon } from './daemons.js'
import { endedEarly, waitForPort } from './wait.js'
import { NodeBootInterruptedError, NodeBootTimeoutError, type BootWatchOptions } from './boot-watch.js'
import {
  METADATA_PORT,
  MINI_DIR,
  miniPaths,
  NODE_PORTS,
  readMiniRecord,
  requireMiniNode,
  writeMiniRecord,
  type MiniNodeRecord,
  type MiniPaths,
  type MiniRecord,
} from './layout.js'
import { chooseNetwork, miniNetwork, type NetworkMode } from './network.js'
import { miniAttestation, type NodeBootContext } from './node-boot.js'
import {
  apiListen,
  processMachines,
  vmMachines,
  type MachineBoot,
  type MachineKind,
  type Machines,
} from './machines.js'
import { VM_MEMORY_MIB } from './vm-node.js'
import { imageFiles } from '../vm/index.js'
import { miniDown } from './down.js'
import { createLocalCa, manufactureTpm, writeLocalCaConfig } from './tpm-ca.js'
import { checkMiniVariant, createCvmStandIn, cvmConfigHeader, isMiniCvmVariant } from './cvm.js'
import type { MetadataView } from './metadata-server.js'
import { simulatedComponents } from '../simulator/index.js'

/** What every output of `mini` says first. */
export const SIMULATED_NOTICE =
  'Kubernetes is SIMULATED: kubeadm, the Kubernetes API, systemctl and the kubelet are contract fakes, and state disks are not mapped (no device-mapper). Attestation, aTLS, keys, LUKS2 headers, join tickets, certificates and Helm releases are real.'

/** `--machines vm`: what is real on a VM node, and what stays SIMULATED. */
export const VM_SIMULATED_NOTICE =
  'Kubernetes is SIMULATED: kubeadm and the kubelet are contract fakes in each VM, the Kubernetes API a contract fake on this host. Each node is a QEMU VM under real systemd, with its TPM at /dev/tpmrm0 (swtpm) and its state disk mapped with dm-crypt and dm-integrity; attestation, aTLS, keys, join tickets, certificates and Helm releases are real.'

export const simulatedNotice = (machines: MachineKind = 'process') =>
  machines === 'vm' ? VM_SIMULATED_NOTICE : SIMULATED_NOTICE

/** The notice for the cluster in `workspace` (a VM cluster's, or the process nodes' when none is recorded). */
export const clusterNotice = async (workspace: string) =>
  simulatedNotice((await readMiniRecord(workspace).catch(() => undefined))?.machines)

export interface MiniIo {
  runner: Runner
  /** argv that runs this CLI (node + bin/run.js). */
  cli: readonly string[]
  nodeBinary: string
  files: {
    unitTemplates: string
    kubeletUnit: string
    /** mini's own units (the verification service, a DaemonSet in Constellation). */
    miniUnits: string
    /** The node supervisor's entry (dist/mini-node.js), run by nodeBinary. */
    nodeEntry: string
    kubeadmFake: string
    systemctlFakeDir: string
    apiEntry: string
    metadataEntry: string
    chartsDir: string
  }
  /** `--machines vm`: the node image (from the cache, or built now); its folder. */
  vmImage?(signal?: AbortSignal): Promise<string>
  /** The environment node processes start from (PATH, HOME). */
  env: NodeJS.ProcessEnv
  /**
   * Attests cp-0 and initializes the cluster (the operator's `constellation init`); `signal` ends it
   * (mini up interrupted) without starting another step.
   */
  init(workspace: string, opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>
  /** Checks what the run will need (helm) before anything starts. */
  preflight(): Promise<void>
  progress(line: string): void
}

export interface MiniUpOptions {
  workspace: string
  controlPlanes: number
  workers: number
  kubernetes: string
  mode: NetworkMode
  /** tpm-ek: every node's TPM is manufactured with EK certificates from a local CA of the cluster. */
  attestation: AttestationVariant
  skipHelm: boolean
  /** Keep what was started when `mini up` fails or is interrupted (for its logs). */
  retain: boolean
  /** How long joins may take in all. */
  timeoutMs: number
  signal?: AbortSignal
  /** What the nodes are: supervised processes (the default) or QEMU VMs. */
  machines?: MachineKind
}

export interface MiniUpResult {
  workspace: string
  attestation: AttestationVariant
  network: { mode: NetworkMode; hostAddress: string; prefix: string }
  nodes: MiniNodeRecord[]
  machines: MachineKind
  elapsedMs: number
}

const nodeName = (role: 'control-plane' | 'worker', i: number) => `${role}-${i}`

/** One cluster per workspace: a second `mini up` is refused, whatever state the first is in. */
export async function refuseIfRunning(workspace: string): Promise<void> {
  const running = await readMiniRecord(workspace)
  if (running)
    throw new CliError(
      `a mini cluster already runs in ${path.resolve(workspace)} (started ${running.startedAt})`,
      {
        hint: `inspect it with \`constellation status -C ${workspace}\`, or remove it with \`constellation mini down -C ${workspace}\``,
      },
    )
}

/**
 * Starts the cluster and waits until every node has joined. On a failure or `opts.signal`, what
 * was started is removed again (unless `opts.retain`), as nothing of it would be of use.
 */
export async function miniUp(opts: MiniUpOptions, io: MiniIo): Promise<MiniUpResult> {
  const started = Date.now()
  const workspace = path.resolve(opts.workspace)
  await refuseIfRunning(opts.workspace)
  if (isCvmVariant(opts.attestation)) checkMiniVariant(opts.attestation)
  const machines = opts.machines ?? 'process'
  if (machines === 'vm') checkVmOptions(opts)
  await preflight(io, opts.signal)
  const ws = workspacePaths(workspace)
  for (const file of [ws.config, ws.state, ws.masterSecret, ws.adminConf])
    if (await exists(file))
      throw new CliError(
        file === ws.masterSecret
          ? `${file} already exists: a cluster's master secret (\`mini down\` keeps a removed cluster's)`
          : `${file} already exists: ${workspace} holds another cluster's workspace`,
        {
          hint:
            file === ws.masterSecret
              ? 'remove it once you no longer need that cluster, or give mini up another folder with -C; nothing was changed'
              : 'mini up makes a workspace of its own: give it an empty or new folder with -C; nothing was changed',
        },
      )
  const names = [
    ...Array.from({ length: opts.controlPlanes }, (_, i) => nodeName('control-plane', i)),
    ...Array.from({ length: opts.workers }, (_, i) => nodeName('worker', i)),
  ]
  refuseLongSocketPaths(workspace, names)
  const vmImage = machines === 'vm' ? await vmImageOf(io, opts.signal) : undefined
  const createdWorkspace = !(await exists(workspace))
  await mkdir(workspace, { recursive: true })
  const network = miniNetwork(await chooseNetwork(opts.mode, io.runner), io.runner)
  const nodes: MiniNodeRecord[] = names.map((name, index) => ({
    name,
    role: name.startsWith('control-plane') ? 'control-plane' : 'worker',
    index,
    address: network.nodeAddress(index),
  }))
  const record: MiniRecord = {
    version: 1,
    startedAt: new Date(started).toISOString(),
    network: { mode: network.mode, id: network.id, prefix: network.prefix },
    // init writes the last two; listed now so that a crash in between removes them too
    createdFiles: [ws.config, ws.state, ws.masterSecret, ws.adminConf],
    createdWorkspace,
    nodes,
    attestation: opts.attestation,
    ...(vmImage && { machines: 'vm' as const, vmImage }),
  }
  await writeMiniRecord(workspace, record) // from here on, `mini down` can undo everything
  try {
    return await startCluster(opts, io, workspace, record, started)
  } catch (err) {
    const known = err instanceof CliError ? err : undefined
    const interrupted = opts.signal?.aborted ? interruptedBy(opts.signal) : undefined
    const down = `\`constellation mini down --purge -C ${opts.workspace}\``
    let left: string
    if (opts.retain)
      left = `what was started is kept (--retain): logs under ${miniPaths(workspace).dir}; ${down} removes it`
    else {
      io.progress(
        `mini up ${interrupted ? 'was interrupted' : 'failed'}: removing what it started (--retain keeps it)`,
      )
      // purge: a cluster that never came up was never handed over, its secret guards nothing
      const removed = await miniDown(workspace, io.runner, { purge: true }).then(
        () => true,
        () => false,
      )
      left = removed
        ? 'what it started is removed'
        : `removing what it started failed; ${down} removes the rest`
    }
    // Interrupted: the one sentence on the state. What the signal did to the steps in flight (a
    // helm "context canceled", a log's tail) is its echo, and an inner hint would name a cluster
    // that is gone.
    if (interrupted)
      throw new CliError(`mini up was interrupted (${interrupted}); ${left}`, {
        exitCode: SIGNAL_EXIT_CODES[interrupted],
      })
    throw new CliError(
      known ? known.message : `mini up: ${err instanceof Error ? err.message : String(err)}`,
      {
        cause: err,
        exitCode: known?.exitCode,
        hint: opts.retain ? left : `${left}; --retain keeps it, for its logs`,
      },
    )
  }
}

async function startCluster(
  opts: MiniUpOptions,
  io: MiniIo,
  workspace: string,
  record: MiniRecord,
  started: number,
): Promise<MiniUpResult> {
  const { nodes } = record
  const network = miniNetwork(record.network, io.runner)
  const paths = miniPaths(workspace)
  const cp0 = nodes[0]
  if (!cp0) throw new CliError('a cluster needs a control plane')

  const vm = record.machines === 'vm'
  io.progress(
    `network: ${vm ? "a tap per VM on the cluster's bridge" : network.mode === 'netns' ? 'a namespace per node' : 'a loopback address per node'}, ${network.prefix}.0/24`,
  )
  const env = { ...io.env, [CLUSTER_MARKER]: network.id, CONSTELL_NO_SPINNER: '1' }
  let ctx = bootContext(record, paths, io)
  // swtpm_setup spends most of a manufacture waiting for its swtpm to end: the network and the
  // simulator's daemons start meanwhile
  let manufacturing: Promise<void> | undefined
  if (opts.attestation === 'tpm-ek') {
    io.progress(
      `attestation tpm-ek: manufacturing ${nodes.length} TPMs with EK certificates from the cluster's local CA (${paths.tpmCa.dir})`,
    )
    await createLocalCaFiles(paths)
    manufacturing = manufactureTpms(ctx, nodes, paths)
    manufacturing.catch(() => {}) // awaited below; meanwhile a failure is not an unhandled rejection
  }
  let cvmSection: ((relativeTo?: string) => Record<string, unknown>) | undefined
  let machines: Machines
  try {
    if (isCvmVariant(opts.attestation)) {
      checkMiniVariant(opts.attestation)
      io.progress(
        `attestation ${opts.attestation}: a STAND-IN ${cvmKind(opts.attestation) === 'snp' ? 'AMD' : 'Intel'} for the cluster (${paths.cvmStandIn.dir}) signs every node's reports; no CVM hardware runs here`,
      )
      cvmSection = await createCvmStandIn(opts.attestation, paths.cvmStandIn)
      ctx = { ...ctx, attestation: miniAttestation(opts.attestation, paths, cvmSection()) }
    }
    machines = vm ? machinesFor(record, paths, io) : processMachines(ctx, paths, network.id)
    for (const node of nodes) await machines.addToNetwork(node)
    await writeWorkspace(workspace, cp0.address, opts, io, machines, cvmSection)
    await startSimulator({
      io,
      paths,
      workspace,
      nodes,
      cp0,
      machines,
      hostAddress: network.hostAddress,
      env,
    })
  } catch (err) {
    // nothing of the cluster is removed while a swtpm_setup still writes into it
    await manufacturing?.catch(() => {})
    throw err
  }
  await manufacturing

  io.progress(
    vm
      ? `booting ${counted(nodes.length, 'QEMU VM')} (TCG, 1 vCPU, ${VM_MEMORY_MIB} MiB each) under real systemd: swtpm at /dev/tpmrm0 (attestation ${opts.attestation}), state-disk setup (dm-crypt + dm-integrity), bootstrap run`
      : `booting ${counted(nodes.length, 'node')}, a supervisor each (its systemd): swtpm (attestation ${opts.attestation}), state-disk setup, bootstrap run`,
  )
  const boots = await Promise.all(
    nodes.map(async (node) => {
      await machines.provision(node)
      return machines.powerOn(node)
    }),
  )
  // every node is watched from here on: a refusal is reported while it happens, a failure ends the wait
  const watchOpts = (boot: MachineBoot): BootWatchOptions => ({
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    progress: io.progress,
    recoverCommand: recoverCommand(opts.workspace, boot.node),
  })
  let failed = false
  const booted = boots.map((boot) =>
    boot.wait(watchOpts(boot)).catch((err: unknown) => {
      failed = true
      throw err
    }),
  )
  booted.forEach((b) => b.catch(() => {}))
  await Promise.race([
    waitForPort(cp0.address, NODE_PORTS.init, {
      what: `${cp0.name}'s Init server`,
      log: machines.bootstrapLog(cp0),
      timeoutMs: opts.timeoutMs,
      gaveUp: () => failed,
    }),
    // a node that failed says why, rather than the port that stayed closed
    Promise.all(booted).then(() => {}),
  ])
  opts.signal?.throwIfAborted()
  io.progress(
    `constellation init: attesting ${cp0.name} at ${cp0.address}:${NODE_PORTS.init} (${opts.attestation}${opts.attestation === 'tpm-ek' ? ': EK certificate chain, then credential activation' : ''})`,
  )
  // a VM's kubeadm stand-in takes minutes on one emulated vCPU (its certificates alone about 1.5 min)
  await io.init(workspace, { ...(vm && { timeoutMs: VM_INIT_TIMEOUT_MS }), signal: opts.signal })
  opts.signal?.throwIfAborted()
  if (nodes.length > 1)
    io.progress(
      `waiting for ${counted(nodes.length - 1, 'node')} to join (each: its bootstrap run, after attesting to ${cp0.name}'s join service)`,
    )
  await Promise.all(booted)
  for (const cp of nodes.filter((n) => n.role === 'control-plane'))
    await waitForPort(cp.address, NODE_PORTS.join, {
      what: `${cp.name}'s join service`,
      log: machines.joinServiceLog(cp),
    })
  return {
    workspace,
    attestation: opts.attestation,
    network: { mode: network.mode, hostAddress: network.hostAddress, prefix: network.prefix },
    nodes,
    machines: machines.kind,
    elapsedMs: Date.now() - started,
  }
}

/** The metadata service and the SIMULATED Kubernetes API, each a daemon; resolves once both listen. */
async function startSimulator(c: {
  io: MiniIo
  paths: MiniPaths
  workspace: string
  nodes: MiniNodeRecord[]
  cp0: MiniNodeRecord
  machines: Machines
  hostAddress: string
  env: NodeJS.ProcessEnv
}) {
  const { io, paths, workspace, nodes, cp0, machines, env } = c
  io.progress('starting the metadata service and the SIMULATED Kubernetes API')
  await writeMetadataView(paths, nodes, cp0.address, workspace)
  const metadata = startDaemon({
    argv: [
      io.nodeBinary,
      io.files.metadataEntry,
      '--listen',
      `${c.hostAddress}:${METADATA_PORT}`,
      '--view',
      paths.metadataView,
    ],
    env,
    logFile: paths.metadataLog,
  })
  await mkdir(paths.apiDir, { recursive: true, mode: 0o700 })
  const placement = machines.api(
    cp0,
    nodes.filter((n) => n.role === 'control-plane'),
  )
  const api = startDaemon({
    argv: [
      ...placement.execPrefix,
      io.nodeBinary,
      io.files.apiEntry,
      '--dir',
      paths.apiDir,
      '--kubeconfig',
      paths.apiKubeconfig,
      '--listen',
      apiListen(placement),
      ...placement.certHosts.flatMap((host) => ['--cert-host', host]),
    ],
    env,
    logFile: paths.apiLog,
  })
  await Promise.all([
    waitForPort(c.hostAddress, METADATA_PORT, {
      what: 'the metadata service',
      log: paths.metadataLog,
      gaveUp: endedEarly(metadata),
    }),
    waitForPort(placement.host, NODE_PORTS.apiServer, {
      what: 'the SIMULATED Kubernetes API',
      log: paths.apiLog,
      gaveUp: endedEarly(api),
    }),
  ])
}

/** How long init may take on a VM control plane (TCG: every step of its bootstrapper is slow). */
const VM_INIT_TIMEOUT_MS = 20 * 60_000

/** What VM nodes need: root (taps on a bridge), and the attestation their image's nodes do. */
function checkVmOptions(opts: MiniUpOptions) {
  if (opts.mode !== 'netns')
    throw new CliError(
      "--machines vm needs the bridged network (--network netns): each VM gets a tap on the cluster's bridge",
      {
        hint: 'run it as root and leave out --network loopback, or leave out --machines vm; nothing was changed',
      },
    )
  if (opts.attestation !== 'qemu-vtpm')
    throw new CliError(
      `--machines vm attests with qemu-vtpm (the VM's swtpm has no EK certificates), not ${opts.attestation}`,
      {
        hint: 'pass --attestation qemu-vtpm, or leave --attestation out; nothing was changed',
      },
    )
}

/**
 * A step before anything is started (the helm check, the image build): Ctrl-C reaches its child
 * too, which then fails, and that failure would be reported as the step's, not as the interrupt it is.
 */
async function beforeStart<T>(
  step: () => Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  try {
    return await step()
  } catch (err) {
    if (!signal?.aborted) throw err
    const by = interruptedBy(signal)
    throw new CliError(`mini up was interrupted (${by}) while it ${what}`, {
      exitCode: SIGNAL_EXIT_CODES[by],
    })
  }
}

const preflight = (io: MiniIo, signal: AbortSignal | undefined): Promise<void> =>
  beforeStart(() => io.preflight(), signal, 'checked for helm; nothing was changed')

async function vmImageOf(io: MiniIo, signal: AbortSignal | undefined): Promise<string> {
  const build = io.vmImage
  if (!build) throw new CliError('--machines vm: this build of mini has no node image to boot')
  return beforeStart(
    () => build(signal),
    signal,
    "built the node image; nothing was changed (the build's files are removed)",
  )
}

/** The machines of a recorded cluster: its processes, or its VMs booted from the image it recorded. */
export function machinesFor(record: MiniRecord, paths: MiniPaths, io: MiniIo): Machines {
  if (record.machines !== 'vm')
    return processMachines(bootContext(record, paths, io), paths, record.network.id)
  if (!record.vmImage)
    throw new CliError(`${paths.record} names no node image for its VMs`, {
      hint: `\`constellation mini down -C ${path.dirname(paths.dir)}\` removes the cluster`,
    })
  const network = miniNetwork(record.network, io.runner)
  return vmMachines(
    {
      network,
      runner: io.runner,
      image: imageFiles(record.vmImage),
      env: io.env,
      clusterId: record.network.id,
      accel: 'tcg',
      simulator: {
        apiDir: paths.apiDir,
        adminKubeconfig: paths.apiKubeconfig,
        listen: `${network.hostAddress}:${NODE_PORTS.apiServer}`,
      },
    },
    paths,
  )
}

/** A node's TPM and key service are sockets in its folder, whose path a socket address must hold. */
export function refuseLongSocketPaths(workspace: string, names: readonly string[]): void {
  for (const name of names)
    for (const socket of Object.values(miniPaths(workspace).node(name).sockets)) {
      const problem = unixAddressProblem(`unix:${socket}`)
      if (problem)
        throw new CliError(`${socket}: ${problem}`, {
          hint: 'give mini up a shorter workspace path (-C); nothing was changed',
        })
    }
}

/** The signal the command aborted with (SIGINT unless it said otherwise). */
const interruptedBy = (signal: AbortSignal): InterruptSignal =>
  signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT'

/** What booting any node of this cluster needs: its network, the CLI, the simulator's variables. */
export function bootContext(record: MiniRecord, paths: MiniPaths, io: MiniIo): NodeBootContext {
  return {
    network: miniNetwork(record.network, io.runner),
    attestation: miniAttestation(record.attestation ?? 'qemu-vtpm', paths),
    runner: io.runner,
    cli: io.cli,
    unitTemplates: io.files.unitTemplates,
    kubeletUnit: io.files.kubeletUnit,
    miniUnits: io.files.miniUnits,
    supervisor: [io.nodeBinary, io.files.nodeEntry],
    env: {
      ...nodeEnvironment(io.env),
      [CLUSTER_MARKER]: record.network.id,
      CONSTELL_NO_SPINNER: '1',
      PATH: `${io.files.systemctlFakeDir}:${io.env.PATH ?? ''}`,
      KUBEADM_FAKE_API_DIR: paths.apiDir,
      KUBEADM_FAKE_ADMIN_KUBECONFIG: paths.apiKubeconfig,
      KUBEADM_FAKE_LOG: paths.kubeadmLog,
    },
  }
}

/**
 * What a node's processes keep of the operator's environment: all but the operator's extra trusted
 * CAs. A node's systemd does not start its units with the operator's shell; its services trust
 * what they are configured with (aTLS, pinned CAs), and Node parses NODE_EXTRA_CA_CERTS at every
 * process start (35 ms of CPU for the system bundle here, in each of a node's processes).
 */
function nodeEnvironment(operator: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _operatorCas, ...env } = operator
  return env
}

export interface RebootHooks {
  /** Runs while the node is off (e.g. to unplug its link). */
  whilePoweredOff?: () => Promise<void>
  /** A power cut (every process SIGKILLed, no TPM2_Shutdown) instead of an orderly reboot. */
  hard?: boolean
  signal?: AbortSignal
  timeoutMs?: number
}

/** How long `rebootNode` waits for the node to be back unless told otherwise. */
export const DEFAULT_REBOOT_TIMEOUT_MS = 300_000

/** The command that gives `node` its disk key when no join service can. */
export const recoverCommand = (workspace: string, node: MiniNodeRecord) =>
  `constellation recover -C ${workspace} --endpoint ${node.address}:${NODE_PORTS.recovery}`

/**
 * Reboots one node: it powers off (in order, or `hooks.hard`: a power cut), and on again: its
 * supervisor starts, its TPM comes up (PCRs reset), its /run is empty. `state-disk setup` gets the
 * disk key from a control plane's join service, or waits for `constellation recover` when none
 * answers; `bootstrap run` then starts the node as before. Resolves once `bootstrap run` is done.
 * The node boots on its own: a timeout or `hooks.signal` ends the wait, not the boot.
 */
export async function rebootNode(workspace: string, name: string, io: MiniIo, hooks: RebootHooks = {}) {
  const { record, node } = await requireMiniNode(workspace, name)
  const paths = miniPaths(workspace)
  const machines = machinesFor(record, paths, io)
  let boot: MachineBoot
  if (machines.reset && !hooks.hard && !hooks.whilePoweredOff) {
    io.progress(
      `${name}: reset (as its reset button: no shutdown, its TPM re-initialised so its PCRs reset, its disks kept; QEMU restarted)`,
    )
    boot = await machines.reset(node)
  } else {
    io.progress(
      hooks.hard
        ? `${name}: power cut (every process killed, its TPM without TPM2_Shutdown)`
        : `${name}: shutting down (its services stop, then its TPM gets TPM2_Shutdown)`,
    )
    const { orderly } = await machines.powerOff(node, { hard: hooks.hard })
    if (!hooks.hard && !orderly)
      io.progress(
        `${name}: ${machines.kind === 'vm' ? 'it did not power off in time after the ACPI power button' : 'its supervisor was not running or did not stop in time'}: it was stopped as by a power cut`,
      )
    await hooks.whilePoweredOff?.()
    boot = await machines.powerOn(node)
  }
  io.progress(
    `${name} boots: its disk key comes from a control plane's join service, or from \`${recoverCommand(workspace, node)}\` when none is up`,
  )
  const timeoutMs = hooks.timeoutMs ?? DEFAULT_REBOOT_TIMEOUT_MS
  const status = `\`constellation status -C ${workspace}\` shows when it is back`
  try {
    await boot.wait({
      timeoutMs,
      signal: hooks.signal,
      progress: io.progress,
      announceWaits: true,
      rebooted: true,
      recoverCommand: recoverCommand(workspace, node),
    })
  } catch (err) {
    if (err instanceof NodeBootInterruptedError)
      throw new CliError(
        `mini reboot was interrupted (${err.signal}): ${name} is still booting (waiting for ${err.waitingFor}); ${status}`,
        { exitCode: err.exitCode, data: { node: name, waitingFor: err.waitingFor } },
      )
    if (err instanceof NodeBootTimeoutError)
      throw new CliError(err.message, {
        exitCode: err.exitCode,
        data: err.data,
        hint: `it keeps booting on its own: ${status}; \`constellation mini reboot ${name} -C ${workspace}\` starts it over; its logs: ${paths.node(name).dir}`,
      })
    throw err
  }
  return node
}

/** The cluster's local CA (swtpm_localca's files), made before any TPM is. */
async function createLocalCaFiles(paths: MiniPaths) {
  await writeLocalCaConfig(paths.tpmCa)
  await createLocalCa(paths.tpmCa)
}

/** Every node's TPM state, before its swtpm first starts: all at once (swtpm_localca locks its statedir). */
async function manufactureTpms(ctx: NodeBootContext, nodes: MiniNodeRecord[], paths: MiniPaths) {
  const tpmState = (node: MiniNodeRecord) => paths.node(node.name).tpmState
  await Promise.all(nodes.map((node) => manufactureTpm(ctx.runner, tpmState(node), paths.tpmCa, ctx.env)))
}

/** `config generate` for cp-0, with the simulator's kubeadm as the Kubernetes component. */
async function writeWorkspace(
  workspace: string,
  endpoint: string,
  opts: MiniUpOptions,
  io: MiniIo,
  machines: Machines,
  cvmSection?: (relativeTo?: string) => Record<string, unknown>,
) {
  await generateWorkspace({
    workspace,
    provider: PROVIDERS.find((p) => PROVIDER_VARIANTS[p].includes(opts.attestation)) ?? 'qemu',
    kubernetes: opts.kubernetes,
    variant: opts.attestation,
    name: 'mini',
    endpoint,
  })
  const file = workspacePaths(workspace).config
  const config = await loadConfig(file)
  // the simulator's kubeadm and kubelet of this version (launchers that know it), hash-checked by the node
  config.kubernetesComponents = simulatedComponents(
    config.kubernetesVersion,
    machines.componentFiles({
      nodeBinary: io.nodeBinary,
      kubeadmFake: io.files.kubeadmFake,
      kubeletUnit: io.files.kubeletUnit,
    }),
  )
  if (config.attestation.tpmEK)
    // relative to the config: the cluster's local CA issues every EK certificate (no intermediates)
    config.attestation.tpmEK.roots = [path.relative(workspace, miniPaths(workspace).tpmCa.issuerCert)]
  let header = config.attestation.tpmEK ? TPM_EK_HEADER : ''
  if (cvmSection && isMiniCvmVariant(opts.attestation)) {
    // the stand-in's root, TCB and measurement in place of the generated placeholders
    const key = ATTESTATION_CONFIG_KEYS[opts.attestation]
    const attestation = config.attestation as Record<string, Record<string, unknown> | undefined>
    attestation[key] = { ...attestation[key], ...cvmSection(workspace) }
    header = cvmConfigHeader(opts.attestation, path.relative(workspace, miniPaths(workspace).cvmStandIn.dir))
  }
  await expectMeasuredBoot(config.attestation, opts.attestation, machines)
  config.upgrade = {
    charts: [
      { name: 'cilium', namespace: 'kube-system' },
      { name: 'coredns', namespace: 'kube-system' },
      { name: 'cert-manager', namespace: 'cert-manager' },
    ].map((c) => ({ ...c, chart: path.join(io.files.chartsDir, c.name), version: '1.0.0' })),
  }
  await writeSecretFile(
    file,
    `# constellation mini: Kubernetes is SIMULATED (kubeadm and the API are contract fakes); the charts are stand-ins\n${header}${stringifyYaml(config)}`,
    'replace',
  )
}

/**
 * The nodes' measured boot (measured-boot.ts; a VM's firmware, vm/firmware.ts) extends PCRs 0–9 the
 * same way on every node: the config enforces those values (the generated ones for the other PCRs
 * stay), so the nodes' event logs and their quotes both match what the operator's config says.
 */
async function expectMeasuredBoot(attestation: object, variant: AttestationVariant, machines: Machines) {
  const section = (attestation as Record<string, { measurements?: Record<string, unknown> } | undefined>)[
    ATTESTATION_CONFIG_KEYS[variant]
  ]
  if (!section) return
  const measurements: Record<string, unknown> = { ...section.measurements }
  for (const [pcr, value] of await machines.bootPcrs())
    measurements[String(pcr)] = { expected: value.toString('hex'), warnOnly: false }
  section.measurements = Object.fromEntries(
    Object.entries(measurements).sort(([a], [b]) => Number(a) - Number(b)),
  )
}

const TPM_EK_HEADER = `# attestation tpm-ek: the nodes' swtpms carry EK certificates from this cluster's local CA
# (swtpm_localca under ${MINI_DIR}/tpm-ca), which stands in for a TPM manufacturer: its issuing
# certificate is the one root below
`

async function writeMetadataView(
  paths: MiniPaths,
  nodes: MiniNodeRecord[],
  endpoint: string,
  workspace: string,
) {
  const view: MetadataView = {
    members: nodes.map((n) => ({ name: n.name, role: n.role, vpcIP: n.address })),
    endpointHost: endpoint,
    initSecretHash: (await initSecretHashFor(workspace)).initSecretHash,
  }
  await writeSecretFile(paths.metadataView, JSON.stringify(view, null, 2) + '\n', 'replace')
}
