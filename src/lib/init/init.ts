/** `constellation init`: master secret first, then one attested Init call, then kubeconfig and state. */
import { randomBytes } from 'node:crypto'
import { access, appendFile, readFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { status, type ChannelCredentials } from '@grpc/grpc-js'
import { isAttestationFailure } from '../atls/index.js'
import { loadConfig, loadState, type ClusterConfig, type ClusterState } from '../config/index.js'
import { CliError, ExitCode, chainMessage } from '../errors/index.js'
import { generateMasterSecret, writeMasterSecret } from '../kms/index.js'
import { workspacePaths } from '../paths.js'
import { writeFileAtomic, writeFileExclusive, type Logger } from '../system/index.js'
import { runTasks, type Terminal } from '../ui/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { mergeKubeconfig, pointAtEndpoint } from './kubeconfig.js'
import { buildInitRequest, initEndpoint } from './request.js'
import { callInit, NotConnectedError, type InitOutcome } from './rpc.js'

export interface InitOptions {
  workspace: string
  conformance: boolean
  mergeKubeconfig: boolean
  timeoutMs: number
  /** No progress lines (for --json). */
  quiet?: boolean
}

export interface InitDeps {
  terminal: Terminal
  /** aTLS credentials that validate the node against these measurements. */
  credentials: (config: ClusterConfig) => ChannelCredentials
  log: Logger
  random?: (n: number) => Buffer
  retryInitialDelayMs?: number
}

export interface InitResult {
  clusterID: string
  kubeconfig: string
  masterSecret: string
  state: string
  mergedInto?: string
}

const MEASUREMENT_SALT_BYTES = 32

export async function initCluster(opts: InitOptions, deps: InitDeps): Promise<InitResult> {
  const paths = workspacePaths(opts.workspace)
  const config = await loadConfig(paths.config)
  const state = await loadState(paths.state)
  await checkPreInit(state, paths)
  const random = deps.random ?? randomBytes
  const secret = generateMasterSecret(random)
  const measurementSalt = random(MEASUREMENT_SALT_BYTES)
  const endpoint = initEndpoint(state.infrastructure.clusterEndpoint)
  const request = buildInitRequest(config, state, secret, measurementSalt, opts.conformance)
  const ctx: { outcome?: InitOutcome } = {}
  await runTasks(
    [
      {
        title: `Writing master secret to ${paths.masterSecret}`,
        task: () => writeMasterSecret(paths.masterSecret, secret),
      },
      {
        title: `Connecting to ${endpoint.address} and verifying its attestation`,
        task: async (c, task) => {
          const signal = AbortSignal.timeout(opts.timeoutMs)
          c.outcome = await callInit(request, {
            address: endpoint.address,
            credentials: deps.credentials(config),
            signal,
            deadline: new Date(Date.now() + opts.timeoutMs),
            log: deps.log,
            retryInitialDelayMs: deps.retryInitialDelayMs,
            onConnected: () =>
              (task.title = `Initializing the cluster on ${endpoint.address} (attestation verified)`),
          }).catch((err: unknown) => {
            throw unreachable(err, endpoint.address, signal)
          })
        },
      },
    ],
    ctx,
    deps.terminal,
    { silent: opts.quiet },
  )
  const outcome = ctx.outcome
  if (!outcome) throw new Error('init finished without an outcome')
  if (!outcome.ok) throw await initFailed(outcome, paths.clusterLog, paths.masterSecret)
  const kubeconfig = pointAtEndpoint(outcome.kubeconfig, endpoint.host)
  await writeFileExclusive(paths.adminConf, kubeconfig)
  const clusterID = outcome.clusterId.toString('hex')
  const updated: ClusterState = {
    ...state,
    clusterValues: { clusterID, ownerID: '', measurementSalt: measurementSalt.toString('hex') },
  }
  await writeFileAtomic(paths.state, stringifyYaml(updated))
  const mergedInto = opts.mergeKubeconfig
    ? await mergeIntoUserKubeconfig(kubeconfig, deps.terminal.env)
    : undefined
  return {
    clusterID,
    kubeconfig: paths.adminConf,
    masterSecret: paths.masterSecret,
    state: paths.state,
    mergedInto,
  }
}

async function checkPreInit(state: ClusterState, paths: ReturnType<typeof workspacePaths>): Promise<void> {
  if (state.clusterValues.clusterID)
    throw new CliError(
      `${paths.state} already records cluster ${state.clusterValues.clusterID}`,
      1,
      'this workspace was initialized; use a new workspace for a new cluster',
    )
  for (const file of [paths.adminConf, paths.masterSecret]) {
    const exists = await access(file).then(
      () => true,
      () => false,
    )
    if (exists)
      throw new CliError(
        `${file} already exists`,
        1,
        'move it away or use a new workspace; nothing was changed',
      )
  }
}

function unreachable(err: unknown, address: string, signal: AbortSignal): Error {
  if (isAttestationFailure(err))
    return new CliError(
      `the node at ${address} failed attestation; nothing was sent to it`,
      ExitCode.AttestationFailed,
      'check the measurements in constellation-conf.yaml against the node image',
      { cause: err },
    )
  if (err instanceof NotConnectedError || signal.aborted)
    return new CliError(
      `could not reach the node at ${address}`,
      ExitCode.Unreachable,
      'check that the node is running and clusterEndpoint in constellation-state.yaml; then run init again (the master secret file must be moved away first)',
      { cause: err },
    )
  return new Error(`init call to ${address}`, { cause: err })
}

async function initFailed(
  outcome: Extract<InitOutcome, { ok: false }>,
  clusterLog: string,
  masterSecret: string,
): Promise<CliError> {
  if (outcome.logs.length > 0) await appendFile(clusterLog, outcome.logs, { mode: 0o600 })
  const logNote =
    outcome.logs.length > 0
      ? `the node's logs are in ${clusterLog}`
      : `the node sent no logs${outcome.logError ? ` (${outcome.logError})` : ''}`
  return new CliError(
    `initializing the cluster failed on the node: ${outcome.error}`,
    ExitCode.Failure,
    `${whatToDoAfter(outcome.code, path.basename(masterSecret))}; ${logNote}`,
  )
}

/** The node refuses with these codes before it takes its lock: it is unchanged and can still be initialized. */
function whatToDoAfter(code: status | undefined, masterSecret: string): string {
  const again = `move ${masterSecret} away, then run init again`
  switch (code) {
    case status.PERMISSION_DENIED:
      return `the node was not changed: the init secret in constellation-state.yaml is not the one the node was given; fix that, ${again}`
    case status.INVALID_ARGUMENT:
      return `the node was not changed: fix the request as the message says (constellation-conf.yaml), ${again}`
    case status.FAILED_PRECONDITION:
      return `this request changed nothing on the node; if the node is already initialized or joining a cluster, create a new one; otherwise fix what the message names on the node, restart its bootstrapper, ${again}`
    default:
      return `the node cannot be initialized again: terminate it and create a new one, ${again}`
  }
}

async function mergeIntoUserKubeconfig(ours: string, env: NodeJS.ProcessEnv): Promise<string> {
  const file =
    env.KUBECONFIG?.split(path.delimiter).find((f) => f !== '') ??
    path.join(env.HOME ?? os.homedir(), '.kube', 'config')
  const existing = await readFile(file, 'utf8').catch((err: unknown) => {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return undefined
    throw new CliError(`reading ${file}: ${chainMessage(err)}`)
  })
  await writeFileAtomic(file, mergeKubeconfig(existing, ours, file))
  return file
}
