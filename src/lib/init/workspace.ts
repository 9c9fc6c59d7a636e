/** What init finds in the workspace before it sends anything: files in the way, and the master secret to use. */
import type { ClusterState } from '../config/index.js'
import { CliError } from '../errors/index.js'
import { generateMasterSecret, readMasterSecret, type MasterSecret } from '../kms/index.js'
import type { WorkspacePaths } from '../paths.js'
import { lstatIfPresent } from '../system/index.js'

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
