/**
 * `mini up --merge-kubeconfig` and its undoing: the cluster's admin kubeconfig merged into the
 * user's ($KUBECONFIG's first file, or ~/.kube/config) beside what is there, with init's entry
 * names, and recorded, so that `mini down` takes out exactly that and nothing else.
 */
import { readFile } from 'node:fs/promises'
import { loadState } from '../config/index.js'
import {
  mergeIntoUserKubeconfig,
  nameEntriesAfterCluster,
  removeFromUserKubeconfig,
  userKubeconfigPath,
} from '../init/index.js'
import { workspacePaths } from '../paths.js'
import { readMiniRecord, writeMiniRecord, type MiniRecord } from './layout.js'

export interface MergedKubeconfig {
  file: string
  /** The context kubectl now uses (`kubectl --context` names it). */
  context: string
}

/** Merges and records; the merge is the same as `init --merge-kubeconfig`'s. */
export async function mergeMiniKubeconfig(
  workspace: string,
  env: NodeJS.ProcessEnv,
): Promise<MergedKubeconfig> {
  const ws = workspacePaths(workspace)
  const record = await readMiniRecord(workspace)
  if (!record) throw new Error(`no mini cluster in ${ws.dir} to merge`)
  const state = await loadState(ws.state)
  const name = `${state.infrastructure.name}-${state.clusterValues.clusterID.slice(0, 8)}`
  const file = userKubeconfigPath(env)
  await mergeIntoUserKubeconfig(nameEntriesAfterCluster(await readFile(ws.adminConf, 'utf8'), name), file)
  await writeMiniRecord(workspace, {
    ...record,
    mergedKubeconfig: { file, cluster: name, user: `${name}-admin`, context: name },
  })
  return { file, context: name }
}

/** Takes the recorded merge out again; what it did, for `mini down`'s list, or undefined. */
export async function unmergeMiniKubeconfig(record: MiniRecord): Promise<string | undefined> {
  const merged = record.mergedKubeconfig
  if (!merged) return undefined
  return (await removeFromUserKubeconfig(merged.file, merged))
    ? `kubeconfig entries of context ${merged.context} in ${merged.file}`
    : undefined
}
