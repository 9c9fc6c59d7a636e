/** Which node `verify` attests and which cluster ID it expects: flags first, then the workspace state. */
import path from 'node:path'
import { loadStateIfPresent } from '../config/index.js'
import { UsageError } from '../errors/index.js'
import { verifyServiceTarget, verifyTargetFromClusterEndpoint } from './endpoint.js'

export interface VerifyTarget {
  /** gRPC target HOST:PORT. */
  endpoint: string
  clusterId?: string
  /** Where the cluster ID came from, for the report. */
  clusterIdFrom?: 'flag' | 'state'
}

export interface VerifyTargetFlags {
  nodeEndpoint?: string
  clusterId?: string
}

export async function resolveVerifyTarget(
  flags: VerifyTargetFlags,
  stateFile: string,
): Promise<VerifyTarget> {
  const state = flags.nodeEndpoint && flags.clusterId ? undefined : await loadStateIfPresent(stateFile)
  const name = path.basename(stateFile)
  let endpoint: string
  if (flags.nodeEndpoint !== undefined) {
    endpoint = verifyServiceTarget(flags.nodeEndpoint, '--node-endpoint')
  } else if (state?.infrastructure.clusterEndpoint) {
    endpoint = verifyTargetFromClusterEndpoint(
      state.infrastructure.clusterEndpoint,
      `${name}: infrastructure.clusterEndpoint`,
    )
  } else {
    throw new UsageError(
      state
        ? `no node to verify: --node-endpoint not given and ${stateFile} has no infrastructure.clusterEndpoint`
        : `no node to verify: --node-endpoint not given and there is no ${stateFile}`,
      'pass --node-endpoint HOST[:PORT] (-e), or run in the cluster workspace (-C DIR)',
    )
  }
  if (flags.clusterId !== undefined) return { endpoint, clusterId: flags.clusterId, clusterIdFrom: 'flag' }
  const fromState = state?.clusterValues.clusterID
  return fromState ? { endpoint, clusterId: fromState, clusterIdFrom: 'state' } : { endpoint }
}
