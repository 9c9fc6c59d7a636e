/**
 * `mini up` / `mini down` with their production parts: this package's CLI, unit files, simulator
 * and stand-in charts; `ip`, swtpm and cryptsetup through the process runner; init in this process
 * (aTLS against the workspace's measurements, helm from PATH).
 */
import { createAttestedChannelCredentials } from '../lib/atls/index.js'
import { chainMessage, CliError } from '../lib/errors/index.js'
import { detectHelm } from '../lib/helm/index.js'
import { initCluster } from '../lib/init/index.js'
import { openNodeAdmin, preloadClientNodeLibrary } from '../lib/kube/index.js'
import type { AttestationVariant } from '../lib/attestation/index.js'
import {
  addMiniNode,
  removeMiniNode,
  mergeMiniKubeconfig,
  miniDown,
  miniUp,
  rebootNode,
  simulatedNotice,
  type MachineKind,
  type MergedKubeconfig,
  type MiniDownOptions,
  type MiniIo,
  type MiniUpOptions,
  type MiniUpResult,
  type NetworkMode,
} from '../lib/mini/index.js'
import { packageFile, workspacePaths } from '../lib/paths.js'
import { simulatorPaths } from '../lib/simulator/index.js'
import { clusterStatus, renderStatus, type StatusReport } from '../lib/status/index.js'
import {
  abortOnInterrupt,
  counted,
  createLogger,
  createRunner,
  parseDuration,
  runnerWithSignal,
} from '../lib/system/index.js'
import { commandForUser, linesProgress, shellQuote } from '../lib/ui/index.js'
import { terminalConfirm } from './nodes.js'
import { statusDeps } from './status.js'
import { ensureNodeImage, staleImagesNote, vmImageCacheDir } from './vm.js'

export function miniIo(opts: { skipHelm: boolean; progress: (line: string) => void }): MiniIo {
  const simulator = simulatorPaths()
  return {
    runner: createRunner(),
    cli: [process.execPath, packageFile('bin', 'run.js')],
    nodeBinary: process.execPath,
    files: {
      unitTemplates: packageFile('templates', 'systemd'),
      kubeletUnit: simulator.kubeletUnit,
      miniUnits: packageFile('templates', 'mini'),
      nodeEntry: packageFile('dist', 'mini-node.js'),
      kubeadmFake: simulator.kubeadmFake,
      systemctlFakeDir: simulator.systemctlFakeDir,
      apiEntry: simulator.apiEntry,
      metadataEntry: packageFile('dist', 'mini-metadata.js'),
      chartsDir: packageFile('simulator', 'charts'),
    },
    env: process.env,
    progress: opts.progress,
    vmImage: async (signal) => {
      const image = await ensureNodeImage((line) => opts.progress(`node image: ${line}`), { signal })
      const note = image.built ? await staleImagesNote(vmImageCacheDir(), image) : undefined
      opts.progress(
        `node image ${image.built ? `built in ${image.manifest.buildSeconds} s` : 'from the cache'}: ${image.files.dir} (kernel ${image.manifest.kernel}, Node.js ${image.manifest.nodeVersion})`,
      )
      if (note) opts.progress(`note: ${note}`)
      return image.files.dir
    },
    preflight: () => (opts.skipHelm ? Promise.resolve() : checkHelmPresent()),
    init: async (workspace, { timeoutMs = 120_000, signal } = {}) => {
      // the status at the end reads the API through @kubernetes/client-node (~0.6 s of CPU to
      // load): loaded while the first node runs kubeadm, when this process only waits
      preloadClientNodeLibrary()
      await initCluster(
        {
          workspace,
          conformance: false,
          mergeKubeconfig: false,
          timeout: { text: `${Math.round(timeoutMs / 1000)}s`, ms: timeoutMs },
          debug: false,
          skipHelm: opts.skipHelm,
          skipHelmWait: false,
        },
        {
          // init's steps under mini's own line, so that its waits (the API, each release) say what
          // they wait for and each retry is seen
          progress: linesProgress(opts.progress, { signal }),
          env: process.env,
          // init's own handshake: a fresh node, or (PCR 15 this workspace's cluster ID) a resume
          credentials: (_config, handshake) => createAttestedChannelCredentials(handshake),
          log: createLogger({ format: 'text', level: 'error' }),
          printLastResort: () => {},
          helm: { runner: runnerWithSignal(createRunner(), signal), env: process.env },
          signal,
        },
      )
    },
  }
}

/** The Helm releases need helm: say so before any node starts, not after init. */
export async function checkHelmPresent(): Promise<void> {
  await detectHelm({ runner: createRunner(), env: process.env }, '/dev/null').catch((cause: unknown) => {
    throw new CliError("mini up installs the cluster's Helm releases with helm, and none works here", {
      cause,
      hint: 'put helm 3.8+ or 4 on PATH, or pass --skip-helm',
    })
  })
}

export async function runMiniUp(
  opts: MiniUpOptions,
  progress: (line: string) => void,
  extra: { mergeKubeconfig?: boolean } = {},
): Promise<{
  up: Awaited<ReturnType<typeof miniUp>>
  status: StatusReport
  mergedKubeconfig?: MergedKubeconfig
  warnings: string[]
}> {
  const up = await miniUp(opts, miniIo({ skipHelm: opts.skipHelm, progress }))
  const warnings: string[] = []
  // after the cluster is up, as `init --merge-kubeconfig` does it: a merge that fails (an entry of
  // that name, different) leaves a working cluster and says so
  const mergedKubeconfig = extra.mergeKubeconfig
    ? await mergeMiniKubeconfig(opts.workspace, process.env).catch((err: unknown) => {
        warnings.push(
          `not merged into your kubeconfig: ${chainMessage(err)}; use ${workspacePaths(opts.workspace).adminConf} directly`,
        )
        return undefined
      })
    : undefined
  const status = await clusterStatus(
    await statusDeps({ workspace: opts.workspace, verifyPort: 30081, timeoutMs: 15_000 }),
  )
  return { up, status, mergedKubeconfig, warnings }
}

/** `mini up`'s flags, as both of its entries read them (src/commands/mini/up.ts, src/mini-run.ts). */
export interface MiniUpFlags {
  workspace: string
  'control-planes': number
  workers: number
  kubernetes: string
  attestation: string
  machines: string
  network: string
  'skip-helm': boolean
  timeout?: string
  'merge-kubeconfig': boolean
  retain: boolean
}

export type MiniUpReport = MiniUpResult & {
  simulated: string
  status: StatusReport
  mergedKubeconfig?: MergedKubeconfig
}

/**
 * `mini up` as the user sees it, whichever entry parsed the flags: the notice and progress on
 * stderr, the cluster, then (unless `json`) its status and what to do next on stdout. Returns the
 * report that --json prints.
 */
export async function runMiniUpCommand(
  flags: MiniUpFlags,
  out: { json: boolean; log: (line: string) => void; warn: (line: string) => void },
): Promise<MiniUpReport> {
  const mode: NetworkMode =
    flags.network === 'auto'
      ? process.getuid?.() === 0
        ? 'netns'
        : 'loopback'
      : (flags.network as NetworkMode)
  const machines = flags.machines as MachineKind
  const notice = simulatedNotice(machines)
  process.stderr.write(`${notice}\n`)
  const interrupt = abortOnInterrupt()
  try {
    const { up, status, mergedKubeconfig, warnings } = await runMiniUp(
      {
        workspace: flags.workspace,
        controlPlanes: flags['control-planes'],
        workers: flags.workers,
        kubernetes: flags.kubernetes,
        mode,
        attestation: flags.attestation as AttestationVariant,
        skipHelm: flags['skip-helm'],
        retain: flags.retain,
        timeoutMs: flags.timeout
          ? parseDuration(flags.timeout, '--timeout')
          : machines === 'vm'
            ? 30 * 60_000
            : 5 * 60_000,
        signal: interrupt.signal,
        machines,
      },
      (line) => process.stderr.write(`• ${line}\n`),
      { mergeKubeconfig: flags['merge-kubeconfig'] },
    )
    if (!out.json) {
      for (const warning of warnings) out.warn(`Warning: ${warning}`)
      out.log(renderStatus(status))
      out.log('')
      out.log(
        `${counted(up.nodes.length, 'node')} up in ${(up.elapsedMs / 1000).toFixed(1)} s (${machines === 'vm' ? 'a QEMU VM each, on a bridge' : mode === 'netns' ? 'a network namespace each' : 'a loopback address each'}, ${up.network.prefix}.0/24; attestation ${up.attestation}).`,
      )
      out.log(notice)
      // as the user can type them here: the CLI their PATH finds, the workspace as they gave it
      const cli = await commandForUser(process.env, packageFile())
      const ws = `-C ${shellQuote(flags.workspace)}`
      out.log(`Look at it: ${cli} status ${ws}; ${cli} verify ${ws}`)
      out.log(`A node's logs: ${cli} mini logs ${up.nodes[0]?.name ?? 'NODE'} ${ws} (-f follows them)`)
      if (mergedKubeconfig)
        out.log(
          `kubectl uses it now: context ${mergedKubeconfig.context} in ${mergedKubeconfig.file} (\`mini down\` removes it)`,
        )
      out.log(`Remove it: ${cli} mini down ${ws}`)
    }
    return { ...up, simulated: notice, status, mergedKubeconfig }
  } finally {
    interrupt.release()
  }
}

export const runMiniDown = (workspace: string, opts: MiniDownOptions = {}) =>
  miniDown(workspace, createRunner(), opts)

export const runMiniReboot = (
  workspace: string,
  node: string,
  opts: { timeoutMs: number; signal: AbortSignal; hard: boolean; progress: (line: string) => void },
) =>
  rebootNode(workspace, node, miniIo({ skipHelm: true, progress: opts.progress }), {
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    hard: opts.hard,
  })

export const runMiniAdd = (
  opts: {
    workspace: string
    name: string
    role: 'control-plane' | 'worker'
    timeoutMs: number
    signal: AbortSignal
  },
  progress: (line: string) => void,
) => addMiniNode(opts, miniIo({ skipHelm: true, progress }))

export const runMiniRemove = (
  opts: { workspace: string; name: string; yes: boolean; drainTimeoutMs: number },
  io: { progress: (line: string) => void; showPlan: (text: string) => void },
) =>
  removeMiniNode(opts, {
    io: miniIo({ skipHelm: true, progress: io.progress }),
    openNodeAdmin: (kubeconfig) => openNodeAdmin(kubeconfig),
    kubeconfig: workspacePaths(opts.workspace).adminConf,
    confirm: terminalConfirm('node removal'),
    showPlan: io.showPlan,
  })
