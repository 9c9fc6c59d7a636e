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
import {
  addMiniNode,
  removeMiniNode,
  mergeMiniKubeconfig,
  miniDown,
  miniUp,
  rebootNode,
  type MergedKubeconfig,
  type MiniDownOptions,
  type MiniIo,
  type MiniUpOptions,
} from '../lib/mini/index.js'
import { packageFile, workspacePaths } from '../lib/paths.js'
import { simulatorPaths } from '../lib/simulator/index.js'
import { clusterStatus, type StatusReport } from '../lib/status/index.js'
import { createLogger, createRunner } from '../lib/system/index.js'
import { linesProgress } from '../lib/ui/index.js'
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
    init: async (workspace, { timeoutMs = 120_000 } = {}) => {
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
          progress: linesProgress(opts.progress),
          env: process.env,
          // init's own handshake: a fresh node, or (PCR 15 this workspace's cluster ID) a resume
          credentials: (_config, handshake) => createAttestedChannelCredentials(handshake),
          log: createLogger({ format: 'text', level: 'error' }),
          printLastResort: () => {},
          helm: { runner: createRunner(), env: process.env },
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
  // the status at the end reads the API through @kubernetes/client-node: loaded while the nodes boot
  preloadClientNodeLibrary()
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
