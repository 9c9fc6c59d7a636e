/**
 * What a failed init tells the operator: what happened, whether the node changed, what to do.
 * gRPC and OpenSSL internals are kept for CONSTELL_DEBUG=1.
 */
import path from 'node:path'
import { status } from '@grpc/grpc-js'
import { attestationRefusalOf, isAttestationFailure } from '../atls/index.js'
import { CliError, ExitCode, messageOf } from '../errors/index.js'
import { withoutRpcInternals } from '../grpc/index.js'
import { appendClusterLog } from './save.js'
import { NotConnectedError, type InitOutcome } from './rpc.js'

export function unreachable(
  err: unknown,
  address: string,
  signal: AbortSignal,
  opts: { timeout: string; debug: boolean },
): Error {
  const cause = opts.debug ? err : undefined
  if (isAttestationFailure(err))
    return new CliError(
      `the node at ${address} failed attestation; nothing was sent to it${opts.debug ? '' : `: ${attestationRefusalOf(err)}`}`,
      {
        exitCode: ExitCode.AttestationFailed,
        hint: 'check the measurements in constellation-conf.yaml against the node image',
        cause,
      },
    )
  if (err instanceof NotConnectedError || signal.aborted) {
    const last = err instanceof NotConnectedError ? withoutRpcInternals(err.message) : ''
    const why = signal.aborted
      ? `no answer within ${opts.timeout}${last ? ` (last error: ${last})` : ''}`
      : last || 'connection failed'
    return new CliError(`could not reach the node at ${address}: ${why}`, {
      exitCode: ExitCode.Unreachable,
      hint: 'check that the node is running and clusterEndpoint in constellation-state.yaml; nothing was sent, so run init again (it reuses the master secret)',
      cause,
    })
  }
  return new Error(`init call to ${address}`, { cause: err })
}

export async function initFailed(
  outcome: Extract<InitOutcome, { ok: false }>,
  files: { clusterLog: string; masterSecret: string },
  debug: boolean,
): Promise<CliError> {
  let logNote: string
  if (outcome.logs.length === 0)
    logNote = `the node sent no logs${outcome.logError && debug ? ` (${outcome.logError})` : ''}`
  else
    logNote = await appendClusterLog(files.clusterLog, outcome.logs).then(
      () => `the node's logs are in ${files.clusterLog}`,
      (err: unknown) => `the node's logs were not saved: ${messageOf(err)}`,
    )
  const error = debug ? outcome.error : withoutRpcInternals(outcome.error)
  return new CliError(`initializing the cluster failed on the node: ${error}`, {
    hint: `${whatToDoAfter(outcome.code, path.basename(files.masterSecret))}; ${logNote}`,
  })
}

/**
 * A resume the node refused or could not serve. Nothing was written in the workspace, and the
 * node's answer (if it has one) stays kept there; the hint says what decides the next step.
 */
export function resumeFailed(
  outcome: Extract<InitOutcome, { ok: false }>,
  masterSecret: string,
  debug: boolean,
): CliError {
  const error = debug ? outcome.error : withoutRpcInternals(outcome.error)
  const unchanged = 'nothing changed on the node or in this workspace'
  let hint: string
  switch (outcome.code) {
    case status.PERMISSION_DENIED:
      hint = `the node keeps its answer for the init secret and the master secret it was initialized with: this workspace's (constellation-state.yaml, ${path.basename(masterSecret)}) are not those; ${unchanged}`
      break
    case status.RESOURCE_EXHAUSTED:
      hint = `${unchanged}; run init again once the wait the node names is over`
      break
    case status.FAILED_PRECONDITION:
      hint = `${unchanged}: the node has no answer to hand over (another run of init received it already)`
      break
    case status.INTERNAL:
      hint = `the node cannot be used: terminate it and create a new one; keep ${path.basename(masterSecret)} and run init again against the new node`
      break
    default:
      hint = `${unchanged}; run init again to resume`
  }
  return new CliError(`resuming the earlier init failed on the node: ${error}`, { hint })
}

/** The node refuses with these codes before it takes its lock: it is unchanged and can still be initialized. */
function whatToDoAfter(code: status | undefined, masterSecret: string): string {
  const again = 'then run init again (it reuses the master secret)'
  switch (code) {
    case status.PERMISSION_DENIED:
      return `the node was not changed: the init secret in constellation-state.yaml is not the one the node was given; fix that, ${again}`
    case status.INVALID_ARGUMENT:
      return `the node was not changed: fix the request as the message says (constellation-conf.yaml), ${again}`
    case status.FAILED_PRECONDITION:
      return `this request changed nothing on the node; if the node is already initialized or joining a cluster, create a new one; otherwise fix what the message names on the node, restart its bootstrapper, ${again}`
    default:
      return `the node cannot be initialized again: terminate it and create a new one; keep ${masterSecret} (the node may have used it) and run init again against the new node`
  }
}
