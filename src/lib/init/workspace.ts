/**
 * What init finds in the workspace before it sends anything: files in the way, and the master
 * secret and measurement salt to use.
 */
import { MEASUREMENT_SALT_BYTES } from '../contract/index.js'
import type { ClusterState } from '../config/index.js'
import { CliError } from '../errors/index.js'
import { generateMasterSecret, readMasterSecret, type MasterSecret } from '../kms/index.js'
import type { WorkspacePaths } from '../paths.js'
import { lstatIfPresent, writeSecretFile } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'

export type MasterSecretSource = 'generated' | 'reused'

/** Refuses a workspace whose cluster exists, or with any entry (a dangling symlink too) at the kubeconfig's path. */
export async function checkPreInit(state: ClusterState, paths: WorkspacePaths): Promise<void> {
  if (state.clusterValues.clusterID)
    throw new CliError(`${paths.state} already records cluster ${state.clusterValues.clusterID}`, {
      hint: 'this workspace was initialized; use a new workspace for a new cluster',
    })
  // lstat, not access(): access follows a symlink, and a dangling one would pass here and then
  // make the exclusive write fail after the node was initialized.
  const entry = await lstatIfPresent(paths.adminConf)
  if (entry)
    throw new CliError(
      `${paths.adminConf} already exists${entry.isSymbolicLink() ? ' (a symbolic link)' : ''}`,
      { hint: 'move it away or use a new workspace; nothing was changed' },
    )
}

/**
 * Read-or-generate, as Constellation's CLI does. A master secret left in a workspace whose state
 * records no cluster is reused: a node that may have used it keeps working with the same keys,
 * and nothing is ever overwritten.
 */
export async function chooseMasterSecret(
  file: string,
  random: (n: number) => Buffer,
): Promise<{ secret: MasterSecret; source: MasterSecretSource }> {
  const existing = await readMasterSecret(file)
  if (existing) return { secret: existing, source: 'reused' }
  return { secret: generateMasterSecret(random), source: 'generated' }
}

/**
 * The measurement salt: the one an earlier run recorded in the state when the master secret is
 * reused too (the two derive the cluster ID a node it reached shows in PCR 15, so that init run
 * again can recognise that node and resume), a new one otherwise. `recorded` says whether the state
 * holds it already.
 */
export function chooseMeasurementSalt(
  state: ClusterState,
  source: MasterSecretSource,
  random: (n: number) => Buffer,
): { salt: Buffer; recorded: boolean } {
  const earlier = state.clusterValues.measurementSalt
  if (source === 'reused' && earlier) return { salt: Buffer.from(earlier, 'hex'), recorded: true }
  return { salt: random(MEASUREMENT_SALT_BYTES), recorded: false }
}

/** Writes the salt into the state (atomically) before anything is sent; resolves with the state as written. */
export async function recordMeasurementSalt(
  file: string,
  state: ClusterState,
  salt: Buffer,
): Promise<ClusterState> {
  const updated: ClusterState = {
    ...state,
    clusterValues: { ...state.clusterValues, measurementSalt: salt.toString('hex') },
  }
  await writeSecretFile(file, stringifyYaml(updated), 'replace').catch((cause: unknown) => {
    throw new CliError(`recording the measurement salt in ${file}`, {
      cause,
      hint: 'nothing was sent to the node; fix what the message names and run init again',
    })
  })
  return updated
}
