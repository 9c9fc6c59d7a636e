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
import { formatHostPort, readEndpoint, retry, sleepMs, type Logger } from '../system/index.js'

/** Constellation's RecoveryPort. */
export const RECOVERY_PORT = 9999
/** Constellation's CLI tries every 5 s while the node does not answer yet. */
const RETRY_INTERVAL_MS = 5_000

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
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export interface RecoverResult {
  endpoint: string
  recovered: true
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
  const signal = AbortSignal.timeout(opts.timeoutMs)
  const credentials = deps.credentials(config)
  let lastError: unknown
  try {
    await retry(() => call(endpoint, credentials, request, signal), {
      attempts: Number.POSITIVE_INFINITY,
      initialDelayMs: deps.retryIntervalMs ?? RETRY_INTERVAL_MS,
      maxDelayMs: deps.retryIntervalMs ?? RETRY_INTERVAL_MS,
      signal,
      sleep: deps.sleep ?? sleepMs,
      retryable: (err) => (err as ServiceError).code === status.UNAVAILABLE && !isAttestationFailure(err),
      onRetry: (err, attempt) => {
        lastError = err
        deps.log.info('The node does not answer yet; trying again', { endpoint, attempt })
      },
    })
  } catch (err) {
    throw failure(signal.aborted && lastError !== undefined ? lastError : err, endpoint, opts.timeout, signal)
  }
  return { endpoint, recovered: true }
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
): Promise<RecoverResponse> {
  const client = new APIClient(endpoint, credentials, { 'grpc.enable_retries': 0 })
  return new Promise<RecoverResponse>((resolve, reject) => {
    const recovering = client.recover(
      request,
      new Metadata(),
      { deadline: Date.now() + 30_000 },
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

function failure(err: unknown, endpoint: string, timeout: string, signal: AbortSignal): Error {
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
  if (code === status.UNAVAILABLE || signal.aborted)
    return new CliError(
      `could not reach the node at ${endpoint}${signal.aborted ? ` within ${timeout}` : ''}: ${details}`,
      {
        exitCode: ExitCode.Unreachable,
        hint: 'a node waiting for its key serves recovery on port 9999 (recoveryServer.listen); check that it runs and --endpoint',
      },
    )
  return new CliError(`recovering the node at ${endpoint} failed: ${details}`)
}
