/**
 * `constellation recover`: when every control plane rebooted at once there is no join service to
 * give a node its disk key. The node then serves recovery (port 9999); this command attests it
 * against the workspace's measurements, and only then sends the master secret as a KMS URI. The node
 * tries it on its disk and boots, or refuses it and keeps its disk closed.
 */
import { Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js'
import { APIClient, type RecoverResponse } from '../../gen/recover.js'
import { attestationRefusalOf, isAttestationFailure } from '../atls/index.js'
import { loadConfig, loadState, type ClusterConfig } from '../config/index.js'
import { CliError, ExitCode } from '../errors/index.js'
import { withoutRpcInternals } from '../grpc/index.js'
import { clusterKmsUri, NO_STORE_URI, readMasterSecret } from '../kms/index.js'
import { workspacePaths } from '../paths.js'
import { describeRetry, formatHostPort, readEndpoint, retry, sleepMs, type Logger } from '../system/index.js'

/** Constellation's RecoveryPort. */
export const RECOVERY_PORT = 9999
/** Constellation's CLI tries every 5 s while the node does not answer yet. */
const RETRY_INTERVAL_MS = 5_000
/** One attempt: the node's queue of a few tries on its disk, each about a second, fits. */
const CALL_TIMEOUT_MS = 30_000
/** How long a busy node (RESOURCE_EXHAUSTED) is left alone when it names no time. */
const BUSY_RETRY_MS = 1_000

export interface RecoverOptions {
  workspace: string
  /** HOST[:PORT] of the node; the state's clusterEndpoint host when absent. */
  endpoint?: string
  timeoutMs: number
  /** The --timeout as the operator wrote it, for messages. */
  timeout: string
}

export interface RecoverDeps {
  /** aTLS credentials that validate the node against these measurements. */
  credentials: (config: ClusterConfig) => ChannelCredentials
  log: Logger
  retryIntervalMs?: number
  callTimeoutMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export interface RecoverResult {
  endpoint: string
  recovered: true
  /**
   * The node answered that it recovered already, after an attempt of this run went unanswered (a
   * deadline, a dropped connection): that attempt's master secret opened the disk, or another
   * operator's did at the same time. Absent when this run's own attempt was answered.
   */
  answerLost?: true
}

export async function recoverNode(opts: RecoverOptions, deps: RecoverDeps): Promise<RecoverResult> {
  const paths = workspacePaths(opts.workspace)
  const config = await loadConfig(paths.config)
  const endpoint =
    opts.endpoint !== undefined
      ? recoveryEndpoint(opts.endpoint, '--endpoint')
      : // the state's port is the InitServer's: only its host names the node
        formatHostPort(
          readEndpoint(
            (await loadState(paths.state)).infrastructure.clusterEndpoint,
            `${paths.state}: infrastructure.clusterEndpoint`,
            RECOVERY_PORT,
          ).host,
          RECOVERY_PORT,
        )
  const secret = await readMasterSecret(paths.masterSecret)
  if (!secret)
    throw new CliError(`${paths.masterSecret} does not exist`, {
      hint: 'recover needs the master secret init wrote; run it in the workspace of the cluster (-C)',
    })
  const request = { kmsUri: clusterKmsUri(secret), storageUri: NO_STORE_URI }
  return sendUntilAnswered(endpoint, request, deps.credentials(config), opts, deps)
}

/**
 * Attempts until the node answers or --timeout passes: again while it is not up (UNAVAILABLE),
 * busy (RESOURCE_EXHAUSTED: after the time it names) or late (DEADLINE_EXCEEDED). The verdict
 * must match what happened on the node: "recovered already" after an attempt of this run went
 * unanswered is a recovery, and an attempt cut off by --timeout may have been one.
 */
async function sendUntilAnswered(
  endpoint: string,
  request: { kmsUri: string; storageUri: string },
  credentials: ChannelCredentials,
  opts: RecoverOptions,
  deps: RecoverDeps,
): Promise<RecoverResult> {
  const signal = AbortSignal.timeout(opts.timeoutMs)
  const sleep = deps.sleep ?? sleepMs
  const callTimeoutMs = deps.callTimeoutMs ?? CALL_TIMEOUT_MS
  let lastError: unknown
  /** An attempt ended without the node's verdict: the node may have tried its secret. */
  let unanswered = false
  /** The node's own word on when to come back (RESOURCE_EXHAUSTED), for the next wait. */
  let busyFor: number | undefined
  try {
    await retry(() => call(endpoint, credentials, request, signal, callTimeoutMs), {
      attempts: Number.POSITIVE_INFINITY,
      initialDelayMs: deps.retryIntervalMs ?? RETRY_INTERVAL_MS,
      maxDelayMs: deps.retryIntervalMs ?? RETRY_INTERVAL_MS,
      signal,
      sleep: (ms, s) => sleep(busyFor ?? ms, s),
      retryable: (err) => RETRYABLE.has(codeOf(err) ?? -1) && !isAttestationFailure(err),
      onRetry: (err, attempt, delayMs) => {
        lastError = err
        busyFor = codeOf(err) === status.RESOURCE_EXHAUSTED ? pushbackMs(err) : undefined
        if (busyFor !== undefined)
          return deps.log.info(`The node is busy: ${detailsOf(err)}; trying again in ${busyFor / 1000} s`, {
            endpoint,
            attempt,
          })
        unanswered = true
        deps.log.info(
          `Waiting for the node at ${endpoint} to answer: ${describeRetry(withoutRpcInternals((err as Partial<ServiceError>).details ?? String(err)), attempt, Number.POSITIVE_INFINITY, delayMs)}`,
        )
      },
    })
  } catch (err) {
    if (unanswered && codeOf(err) === status.FAILED_PRECONDITION && !signal.aborted)
      return { endpoint, recovered: true, answerLost: true }
    const cutOff = signal.aborted && codeOf(err) === status.CANCELLED
    throw failure(signal.aborted && lastError !== undefined ? lastError : err, endpoint, opts.timeout, {
      aborted: signal.aborted,
      cutOff,
    })
  }
  return { endpoint, recovered: true }
}

/** Worth another attempt within --timeout: not up yet, busy, or no answer in time. */
const RETRYABLE = new Set<number>([status.UNAVAILABLE, status.RESOURCE_EXHAUSTED, status.DEADLINE_EXCEEDED])
const codeOf = (err: unknown): number | undefined => (err as Partial<ServiceError>).code
const detailsOf = (err: unknown) => withoutRpcInternals((err as Partial<ServiceError>).details ?? String(err))

/** The node's grpc-retry-pushback-ms, else BUSY_RETRY_MS. */
function pushbackMs(err: unknown): number {
  const hint = Number((err as Partial<ServiceError>).metadata?.get('grpc-retry-pushback-ms')[0])
  return Number.isFinite(hint) && hint > 0 ? hint : BUSY_RETRY_MS
}

/** `host` or `host:port` (from `source`) → HOST:PORT, port 9999 unless named. */
export function recoveryEndpoint(text: string, source: string): string {
  const { host, port } = readEndpoint(text, source, RECOVERY_PORT)
  return formatHostPort(host, port ?? RECOVERY_PORT)
}

/** One fresh channel per attempt; the attestation is checked in its handshake, before the request goes out. */
function call(
  endpoint: string,
  credentials: ChannelCredentials,
  request: { kmsUri: string; storageUri: string },
  signal: AbortSignal,
  timeoutMs: number,
): Promise<RecoverResponse> {
  const client = new APIClient(endpoint, credentials, { 'grpc.enable_retries': 0 })
  return new Promise<RecoverResponse>((resolve, reject) => {
    const recovering = client.recover(
      request,
      new Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, response) => {
        signal.removeEventListener('abort', cancel)
        if (err) reject(err)
        else resolve(response)
      },
    )
    const cancel = () => recovering.cancel()
    signal.addEventListener('abort', cancel, { once: true })
  }).finally(() => client.close())
}

function failure(
  err: unknown,
  endpoint: string,
  timeout: string,
  { aborted, cutOff }: { aborted: boolean; cutOff: boolean },
): Error {
  if (isAttestationFailure(err))
    return new CliError(
      `the node at ${endpoint} failed attestation; the master secret was not sent: ${attestationRefusalOf(err)}`,
      {
        exitCode: ExitCode.AttestationFailed,
        hint: 'check the measurements in constellation-conf.yaml against the node image',
      },
    )
  const code = (err as Partial<ServiceError>).code
  const details = withoutRpcInternals((err as Partial<ServiceError>).details ?? String(err))
  if (code === status.PERMISSION_DENIED)
    return new CliError(`the node at ${endpoint} refused the master secret: ${details}`, {
      hint: 'the state disk stays closed; check that constellation-mastersecret.json belongs to this cluster',
    })
  if (code === status.FAILED_PRECONDITION)
    return new CliError(`the node at ${endpoint} has nothing to recover: ${details}`)
  if (cutOff)
    return new CliError(`the node at ${endpoint} did not answer within ${timeout}`, {
      exitCode: ExitCode.Unreachable,
      hint: 'the last attempt was cut off while the node may have been trying its master secret, so it may have recovered: run recover again, and it answers that it recovered already if so',
    })
  if (code === status.RESOURCE_EXHAUSTED)
    return new CliError(
      `the node at ${endpoint} was busy with other master secrets until --timeout (${timeout}): ${details}`,
      {
        exitCode: ExitCode.Unreachable,
        hint: "someone may be flooding the node's recovery endpoint (its log names the addresses): try again, or from another address, or with a longer --timeout",
      },
    )
  if (code === status.UNAVAILABLE || aborted)
    return new CliError(
      `could not reach the node at ${endpoint}${aborted ? ` within ${timeout}` : ''}: ${details}`,
      {
        exitCode: ExitCode.Unreachable,
        hint: 'a node waiting for its key serves recovery on port 9999 (recoveryServer.listen); check that it runs and --endpoint',
      },
    )
  return new CliError(`recovering the node at ${endpoint} failed: ${details}`)
}

/** The command's line for a recovery. */
export function renderRecoverResult(result: RecoverResult): string {
  return result.answerLost
    ? `Recovered the node at ${result.endpoint}: it answered that it recovered already, after an attempt of this run went unanswered; it opens its state disk and boots.`
    : `Recovered the node at ${result.endpoint}: it opens its state disk and boots.`
}
