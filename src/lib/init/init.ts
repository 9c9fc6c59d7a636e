/**
 * `constellation init`: master secret first, then one attested Init call (or, when an earlier run
 * of this workspace initialized the node, a resume of it), then kubeconfig and state.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { ChannelCredentials } from '@grpc/grpc-js'
import type { ValidationResult, Validator } from '../attestation/index.js'
import { loadConfig, loadState, validatorForConfig, type ClusterConfig } from '../config/index.js'
import { CliError, ExitCode } from '../errors/index.js'
import { withoutRpcInternals } from '../grpc/index.js'
import { encodeMasterSecret, writeMasterSecret } from '../kms/index.js'
import { workspacePaths } from '../paths.js'
import type { Logger, Progress } from '../system/index.js'
import { DEFAULT_HELM_TIMEOUT_MS, prepareBringUp, type BringUp, type HelmProcessDeps } from '../helm/index.js'
import { initFailed, resumeFailed, unreachable } from './failure.js'
import { saveAnswer } from './finish.js'
import { interruptedLine, type Phase } from './interrupted.js'
import { buildInitRequest, initEndpoint } from './request.js'
import { expectedClusterId, nodeFound, resumableValidator, resumeRequest, type NodeFound } from './resume.js'
import { callInit, type InitOutcome } from './rpc.js'
import {
  checkPreInit,
  chooseMasterSecret,
  chooseMeasurementSalt,
  recordMeasurementSalt,
  type MasterSecretSource,
} from './workspace.js'

export interface InitOptions {
  workspace: string
  conformance: boolean
  mergeKubeconfig: boolean
  /** How long to wait for the node: --timeout as the operator wrote it (for messages), and in ms. */
  timeout: { text: string; ms: number }
  /** Keep gRPC/TLS internals in messages (CONSTELL_DEBUG=1). */
  debug?: boolean
  /** Initialize Kubernetes only; the releases are left to `upgrade execute --helm`. */
  skipHelm?: boolean
  /** Install the releases without waiting for them to become ready. */
  skipHelmWait?: boolean
  /** How long each release may take to become ready (default: helm's DEFAULT_HELM_TIMEOUT_MS). */
  helmTimeoutMs?: number
}

export interface InitDeps {
  /** Shows the steps (the command's listr2 rendering, or nothing for --json). */
  progress: Progress
  /** The environment that names the user's kubeconfig ($KUBECONFIG, $HOME) for --merge-kubeconfig. */
  env: NodeJS.ProcessEnv
  /**
   * aTLS credentials that validate the node with `handshake.validators` (the config's measurements;
   * PCR 15 as the workspace expects it) and report each verified handshake to `onVerified`.
   */
  credentials: (config: ClusterConfig, handshake: InitHandshake) => ChannelCredentials
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
  /**
   * Ends the exchange with the node as the timeout does (mini up interrupted). The init command has
   * none: its signals end the process (onInterrupt).
   */
  signal?: AbortSignal
}

/** How init wants the node attested, and where the verified result goes. */
export interface InitHandshake {
  validators: Validator[]
  onVerified: (result: ValidationResult) => void
}

export interface InitResult {
  /**
   * True when the node had been initialized by an earlier run of init in this workspace (cut off
   * after it sent its request), and this run fetched the node's answer instead.
   */
  resumed: boolean
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

/**
 * How often init resumes in one run when the connection breaks under its call (a node behind a
 * flaky or saturated link); a node that drops every connection gets its error after that.
 */
const MAX_RESUMES_AFTER_BREAK = 3

export async function initCluster(opts: InitOptions, deps: InitDeps): Promise<InitResult> {
  const paths = workspacePaths(opts.workspace)
  const config = await loadConfig(paths.config)
  let state = await loadState(paths.state)
  await checkPreInit(state, paths)
  const random = deps.random ?? randomBytes
  const { secret, source } = await chooseMasterSecret(paths.masterSecret, random)
  const { salt: measurementSalt, recorded } = chooseMeasurementSalt(state, source, random)
  // An earlier run left both: it may have initialized the node, which then shows their cluster ID.
  const mayResume = source === 'reused' && recorded
  const clusterId = expectedClusterId(secret, measurementSalt)
  const endpoint = initEndpoint(state.infrastructure.clusterEndpoint)
  const request = buildInitRequest(config, state, secret, measurementSalt, opts.conformance)
  let verified: ValidationResult | undefined
  // what the last verified handshake showed; 'fresh' while the PCR 15 check is the config's own
  let found = (): NodeFound => 'fresh'
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
        : [
            interruptedLine(phase, {
              secretOnDisk: secretOnDisk(),
              masterSecret: paths.masterSecret,
              address: endpoint.address,
              workspace: opts.workspace,
            }),
          ],
    ) ?? (() => {})
  try {
    // One deadline for the whole exchange, resumes after a broken connection included.
    const writeFailed = new AbortController()
    const signal = AbortSignal.any([
      AbortSignal.timeout(opts.timeout.ms),
      writeFailed.signal,
      ...(deps.signal ? [deps.signal] : []),
    ])
    const deadline = new Date(Date.now() + opts.timeout.ms)
    const startAttempt = (drops: number, sendAfter?: Promise<void>) => {
      // After a break the node may have taken its lock for this very request: accept it initialized.
      const resumable = mayResume || drops > 0
      const validators = [
        resumable ? resumableValidator(config, clusterId, paths.masterSecret) : validatorForConfig(config),
      ]
      verified = undefined
      found = () => (resumable && verified ? nodeFound(verified) : 'fresh')
      let connected = () => {}
      const verifiedNow = new Promise<void>((resolve) => (connected = resolve))
      const call = callInit(request, {
        address: endpoint.address,
        credentials: deps.credentials(config, { validators, onVerified: (r) => (verified = r) }),
        signal,
        deadline,
        log: deps.log,
        retryInitialDelayMs: deps.retryInitialDelayMs,
        sendAfter,
        onConnected: () => {
          phase = found() === 'initialized' ? 'resuming' : 'sent'
          connected()
        },
        pickRequest: resumable
          ? () =>
              found() === 'initialized' && verified
                ? resumeRequest(request.initSecret, secret, verified.userData)
                : request
          : undefined,
      }).catch((err: unknown) => {
        throw unreachable(err, endpoint.address, signal, {
          timeout: opts.timeout.text,
          debug: opts.debug ?? false,
        })
      })
      call.catch(() => {}) // awaited in its step; a failure before then is not unhandled
      return { call, verifiedNow }
    }
    // The node attests while the master secret is written; the request waits for the write.
    let secretSaved = () => {}
    const firstAttempt = startAttempt(0, new Promise<void>((resolve) => (secretSaved = resolve)))
    await deps
      .progress([
        {
          title:
            source === 'reused'
              ? `Reusing the master secret in ${paths.masterSecret} (the state records no cluster)`
              : `Writing master secret to ${paths.masterSecret}`,
          run: async () => {
            writing = true
            if (source === 'generated') await writeMasterSecret(paths.masterSecret, secret)
            written = true
            // with the master secret, the salt: together they let init run again recognise the node
            if (!recorded) state = await recordMeasurementSalt(paths.state, state, measurementSalt)
          },
        },
      ])
      .then(secretSaved, (err: unknown) => {
        writeFailed.abort() // the connection goes, nothing was sent on it
        throw err
      })
    let answer: Extract<InitOutcome, { ok: true }> | undefined
    let resumed = false
    let broken: Extract<InitOutcome, { ok: false }> | undefined
    for (let drops = 0; !answer; drops++) {
      const { call, verifiedNow } = drops === 0 ? firstAttempt : startAttempt(drops)
      await deps.progress([
        {
          title: broken
            ? `The connection to ${endpoint.address} broke after the request reached it (${withoutRpcInternals(broken.error)}); verifying the node's attestation again to resume`
            : `Verifying the attestation of the node at ${endpoint.address}`,
          run: async () => {
            await Promise.race([verifiedNow, call])
          },
        },
      ])
      const resuming = found() === 'initialized'
      if (drops === 0) resumed = resuming
      broken = undefined
      await deps.progress([
        {
          title: resuming
            ? drops > 0
              ? `Resuming: the node at ${endpoint.address} took its lock for this request; fetching its answer`
              : `Resuming: the node at ${endpoint.address} took its lock for an earlier init of this workspace; fetching its answer`
            : `Initializing the cluster on ${endpoint.address}`,
          run: async () => {
            const outcome = await call
            if (!outcome.ok && outcome.dropped && drops < MAX_RESUMES_AFTER_BREAK) {
              broken = outcome
              deps.log.warn('The connection to the node broke after the request reached it; resuming', {
                node: endpoint.address,
                error: outcome.error,
              })
              return
            }
            if (!outcome.ok)
              throw resuming
                ? resumeFailed(outcome, paths.masterSecret, opts.debug ?? false)
                : await initFailed(outcome, paths, opts.debug ?? false)
            if (resuming && !outcome.clusterId.equals(clusterId))
              throw new CliError(
                `the node answered cluster ID ${outcome.clusterId.toString('hex')}, not ${clusterId.toString('hex')}, which its PCR 15 showed`,
                { hint: 'nothing was saved; the node may not be the one it attested to be' },
              )
            phase = 'answered'
            answer = outcome
          },
        },
      ])
    }
    if (!answer) throw new Error('init finished without an outcome')
    const result = await saveAnswer(answer, {
      opts,
      deps,
      paths,
      state,
      measurementSalt,
      endpoint,
      config,
      source,
      resumed,
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
          helmTimeoutMs: opts.helmTimeoutMs ?? DEFAULT_HELM_TIMEOUT_MS,
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

function fileHolds(file: string, content: string): boolean {
  try {
    return readFileSync(file, 'utf8') === content
  } catch {
    return false
  }
}
