/** `constellation init`: master secret first, then one attested Init call, then kubeconfig and state. */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { ChannelCredentials } from '@grpc/grpc-js'
import { MEASUREMENT_SALT_BYTES } from '../attestation/index.js'
import { loadConfig, loadState, type ClusterConfig, type ClusterState } from '../config/index.js'
import { chainMessage, CliError, ExitCode, messageOf } from '../errors/index.js'
import { encodeMasterSecret, writeMasterSecret } from '../kms/index.js'
import { workspacePaths, type WorkspacePaths } from '../paths.js'
import type { Logger, Progress } from '../system/index.js'
import { prepareBringUp, type BringUp, type HelmProcessDeps } from '../helm/index.js'
import { initFailed, unreachable } from './failure.js'
import {
  mergeIntoUserKubeconfig,
  nameEntriesAfterCluster,
  pointAtEndpoint,
  userKubeconfigPath,
} from './kubeconfig.js'
import { nextSteps } from './next-steps.js'
import { buildInitRequest, initEndpoint } from './request.js'
import { callInit, type InitOutcome } from './rpc.js'
import { saveInitResult } from './save.js'
import { checkPreInit, chooseMasterSecret, type MasterSecretSource } from './workspace.js'

export interface InitOptions {
  workspace: string
  conformance: boolean
  mergeKubeconfig: boolean
  timeoutMs: number
  /** The --timeout as the operator wrote it, for messages. */
  timeout?: string
  /** Keep gRPC/TLS internals in messages (CONSTELL_DEBUG=1). */
  debug?: boolean
  /** Initialize Kubernetes only; the releases are left to `upgrade execute --helm`. */
  skipHelm?: boolean
  /** Install the releases without waiting for them to become ready. */
  skipHelmWait?: boolean
  /** Go duration each release may take to become ready (default 10m). */
  helmTimeout?: string
}

export interface InitDeps {
  /** Shows the steps (the command's listr2 rendering, or nothing for --json). */
  progress: Progress
  /** The environment that names the user's kubeconfig ($KUBECONFIG, $HOME) for --merge-kubeconfig. */
  env: NodeJS.ProcessEnv
  /** aTLS credentials that validate the node against these measurements. */
  credentials: (config: ClusterConfig) => ChannelCredentials
  log: Logger
  random?: (n: number) => Buffer
  retryInitialDelayMs?: number
  /**
   * Takes over Ctrl-C/SIGTERM while init runs: `describe` says what is left behind (when the signal
   * comes). Returns the function that hands the signals back. Signals are left alone when absent.
   */
  onInterrupt?: (describe: () => string[]) => () => void
  /** The last place the admin kubeconfig can go when no file takes it. */
  printLastResort: (kubeconfig: string) => void
  now?: () => Date
  /** helm, for the releases after kubeadm (not needed with skipHelm). */
  helm?: HelmProcessDeps
}

export interface InitResult {
  clusterID: string
  kubeconfig: string
  masterSecret: string
  /** Whether init wrote a new master secret or used the one a failed or interrupted run left. */
  masterSecretSource: MasterSecretSource
  state: string
  mergedInto?: string
  /** Things that did not go as asked although the cluster is initialized (e.g. the merge). */
  warnings: string[]
  /** The Helm releases installed after kubeadm (none with --skip-helm). */
  releases: Array<{ name: string; version: string; namespace: string }>
  nextSteps: string[]
}

/** Where init is, for the line a Ctrl-C prints. */
type Phase = 'preparing' | 'sent' | 'answered' | 'releases'

export async function initCluster(opts: InitOptions, deps: InitDeps): Promise<InitResult> {
  const paths = workspacePaths(opts.workspace)
  const config = await loadConfig(paths.config)
  const state = await loadState(paths.state)
  await checkPreInit(state, paths)
  const random = deps.random ?? randomBytes
  const { secret, source } = await chooseMasterSecret(paths.masterSecret, random)
  const measurementSalt = random(MEASUREMENT_SALT_BYTES)
  const endpoint = initEndpoint(state.infrastructure.clusterEndpoint)
  const request = buildInitRequest(config, state, secret, measurementSalt, opts.conformance)
  let phase: Phase = 'preparing'
  let writing = false
  let written = source === 'reused'
  // Ctrl-C can land after the file is complete but before the await that records it: ask the file.
  const secretOnDisk = () => written || (writing && fileHolds(paths.masterSecret, encodeMasterSecret(secret)))
  let bringUp: BringUp | undefined
  const stopWatching =
    deps.onInterrupt?.(() =>
      phase === 'releases'
        ? [releasesInterrupted(bringUp?.installed() ?? [], opts.workspace)]
        : [interruptedLine(phase, secretOnDisk(), paths.masterSecret, endpoint.address)],
    ) ?? (() => {})
  try {
    let call: Promise<InitOutcome> | undefined
    let answer: Extract<InitOutcome, { ok: true }> | undefined
    await deps.progress([
      {
        title:
          source === 'reused'
            ? `Reusing the master secret in ${paths.masterSecret} (the state records no cluster)`
            : `Writing master secret to ${paths.masterSecret}`,
        run: async () => {
          writing = true
          if (source === 'generated') await writeMasterSecret(paths.masterSecret, secret)
          written = true
        },
      },
      {
        title: `Verifying the attestation of the node at ${endpoint.address}`,
        run: async () => {
          const signal = AbortSignal.timeout(opts.timeoutMs)
          let connected = () => {}
          const verified = new Promise<void>((resolve) => (connected = resolve))
          call = callInit(request, {
            address: endpoint.address,
            credentials: deps.credentials(config),
            signal,
            deadline: new Date(Date.now() + opts.timeoutMs),
            log: deps.log,
            retryInitialDelayMs: deps.retryInitialDelayMs,
            onConnected: () => {
              phase = 'sent'
              connected()
            },
          }).catch((err: unknown) => {
            throw unreachable(err, endpoint.address, signal, {
              timeout: opts.timeout ?? `${opts.timeoutMs} ms`,
              debug: opts.debug ?? false,
            })
          })
          await Promise.race([verified, call])
        },
      },
      {
        title: `Initializing the cluster on ${endpoint.address}`,
        run: async () => {
          const outcome = await call
          if (!outcome) throw new Error('the Init call was not started')
          if (!outcome.ok) throw await initFailed(outcome, paths, opts.debug ?? false)
          phase = 'answered'
          answer = outcome
        },
      },
    ])
    if (!answer) throw new Error('init finished without an outcome')
    const result = await finish(answer, {
      opts,
      deps,
      paths,
      state,
      measurementSalt,
      endpoint,
      config,
      source,
    })
    if (opts.skipHelm) return result
    phase = 'releases'
    try {
      bringUp = await prepareBringUp(
        {
          workspaceDir: paths.dir,
          config,
          state,
          kubeconfig: result.kubeconfig,
          conformance: opts.conformance,
          helmTimeout: opts.helmTimeout ?? DEFAULT_INIT_HELM_TIMEOUT,
          wait: !opts.skipHelmWait,
        },
        deps.helm ?? missingHelmDeps(),
      )
      await deps.progress(bringUp.steps)
    } catch (err) {
      throw releasesFailed(err, result, bringUp?.installed() ?? [], opts.workspace)
    }
    const releases = bringUp.releases.map(({ name, version, namespace }) => ({ name, version, namespace }))
    return { ...result, releases }
  } finally {
    stopWatching()
  }
}

/** Constellation's helm timeout for the bring-up. */
export const DEFAULT_INIT_HELM_TIMEOUT = '10m'

const finishCommand = (workspace: string) => `constellation upgrade execute --helm --yes -C ${workspace}`

/** The cluster is initialized; what is missing is releases, and one command installs them. */
function releasesFailed(err: unknown, result: InitResult, installed: string[], workspace: string): CliError {
  const so = installed.length ? ` (installed: ${installed.join(', ')})` : ''
  return new CliError(`the cluster is initialized, but installing its Helm releases failed${so}`, {
    // the cluster is there: whatever went wrong with the releases is a failure, not a bug
    exitCode: err instanceof CliError ? err.exitCode : ExitCode.Failure,
    hint: `the kubeconfig is ${result.kubeconfig}; once the cause is fixed, finish with \`${finishCommand(workspace)}\``,
    cause: err,
    data: { ...result, releases: installed },
  })
}

function releasesInterrupted(installed: string[], workspace: string): string {
  const so = installed.length ? `${installed.join(', ')} installed so far` : 'none installed yet'
  return `init interrupted while installing the Helm releases (${so}): the cluster is initialized; finish with \`${finishCommand(workspace)}\``
}

function missingHelmDeps(): never {
  throw new Error('init was wired without helm; pass --skip-helm or wire deps.helm')
}

/** After the node answered: save everything it sent, then the optional merge (a warning if it fails). */
async function finish(
  outcome: Extract<InitOutcome, { ok: true }>,
  c: {
    opts: InitOptions
    deps: InitDeps
    paths: WorkspacePaths
    state: ClusterState
    measurementSalt: Buffer
    endpoint: { host: string }
    config: ClusterConfig
    source: MasterSecretSource
  },
): Promise<InitResult> {
  const clusterID = outcome.clusterId.toString('hex')
  const warnings: string[] = []
  let kubeconfig: string
  try {
    kubeconfig = pointAtEndpoint(outcome.kubeconfig, c.endpoint.host)
  } catch (err) {
    kubeconfig = outcome.kubeconfig.toString('utf8') // kept as the node sent it rather than lost
    warnings.push(`the kubeconfig could not be pointed at ${c.endpoint.host}: ${messageOf(err)}`)
  }
  const saved = await saveInitResult(
    {
      paths: c.paths,
      state: c.state,
      clusterID,
      measurementSalt: c.measurementSalt.toString('hex'),
      kubeconfig,
    },
    {
      now: c.deps.now ?? (() => new Date()),
      printLastResort: c.deps.printLastResort,
    },
  )
  warnings.push(...saved.warnings)
  let mergedInto: string | undefined
  if (c.opts.mergeKubeconfig) {
    const entryName = `${c.state.infrastructure.name}-${clusterID.slice(0, 8)}`
    const file = userKubeconfigPath(c.deps.env)
    mergedInto = await mergeIntoUserKubeconfig(nameEntriesAfterCluster(kubeconfig, entryName), file).then(
      () => file,
      (err: unknown) => {
        warnings.push(`not merged into ${file}: ${chainMessage(err)}; use ${saved.kubeconfig} directly`)
        return undefined
      },
    )
  }
  return {
    clusterID,
    kubeconfig: saved.kubeconfig,
    masterSecret: c.paths.masterSecret,
    masterSecretSource: c.source,
    state: c.paths.state,
    mergedInto,
    warnings,
    releases: [],
    nextSteps: c.opts.skipHelm
      ? nextSteps({ workspace: c.opts.workspace, conformance: c.opts.conformance })
      : [],
  }
}

function fileHolds(file: string, content: string): boolean {
  try {
    return readFileSync(file, 'utf8') === content
  } catch {
    return false
  }
}

function interruptedLine(
  phase: Exclude<Phase, 'releases'>,
  secretOnDisk: boolean,
  masterSecret: string,
  address: string,
): string {
  switch (phase) {
    case 'preparing':
      return secretOnDisk
        ? `init interrupted: nothing was sent to the node; the master secret in ${masterSecret} can be reused: run init again`
        : 'init interrupted: nothing was sent to the node and no master secret was written'
    case 'sent':
      return `init interrupted after the request reached ${address}: the node has the request and may be initialized (spent); keep ${masterSecret}, its keys derive from it`
    case 'answered':
      return `init interrupted while saving: the node at ${address} is initialized; keep ${masterSecret} and check the kubeconfig and the state file in the workspace`
  }
}
