/**
 * `mini down`: stops every process of a local cluster and removes what `mini up` made, from the
 * record in its workspace; or, when that workspace was deleted under a running cluster, from what
 * the cluster's processes still say.
 */
import { readdir, rm, rmdir } from 'node:fs/promises'
import path from 'node:path'
import { chainMessage, CliError } from '../errors/index.js'
import { workspacePaths } from '../paths.js'
import { exists, type Runner } from '../system/index.js'
import { CLUSTER_MARKER, markersMentioning, stopMarked } from './daemons.js'
import { unmergeMiniKubeconfig } from './kubeconfig.js'
import { miniPaths, readMiniRecord } from './layout.js'
import { removeNetwork } from './network.js'

export interface MiniDownResult {
  workspace: string
  stoppedProcesses: number
  removed: string[]
  /** What `mini up` created and is left on purpose: the master secret, unless purged. */
  kept: string[]
  /** What could not be undone, and how to do it by hand. */
  warnings: string[]
}

export interface MiniDownOptions {
  /** Remove the master secret too: every disk key derives from it, so nothing can be decrypted after. */
  purge?: boolean
}

/**
 * Stops every process of the cluster and removes everything `mini up` created but the master
 * secret (unless `purge`); safe to repeat.
 */
export async function miniDown(
  workspace: string,
  runner: Runner,
  opts: MiniDownOptions = {},
): Promise<MiniDownResult> {
  const dir = path.resolve(workspace)
  const record = await readMiniRecord(dir)
  if (!record) {
    const orphaned = await downOrphaned(dir, runner)
    if (orphaned) return orphaned
    throw new CliError(`no mini cluster in ${dir}`, {
      hint: `\`constellation mini up -C ${workspace}\` starts one; nothing was changed`,
    })
  }
  const stoppedProcesses = await stopMarked(CLUSTER_MARKER, record.network.id)
  const removed = await removeNetwork(record.network, runner)
  const warnings: string[] = []
  // a kubeconfig it cannot rewrite must not keep the cluster's processes and files around
  const unmerged = await unmergeMiniKubeconfig(record).catch((err: unknown) => {
    const { file, context } = record.mergedKubeconfig ?? {}
    warnings.push(
      `the entries of context ${context} are still in ${file} (${chainMessage(err)}): \`kubectl config delete-context ${context}\` and delete-cluster, delete-user remove them`,
    )
    return undefined
  })
  if (unmerged) removed.push(unmerged)
  const paths = miniPaths(dir)
  removed.push(...(await releaseDiskImages(paths.dir, runner)))
  const kept: string[] = []
  const keep = opts.purge ? undefined : workspacePaths(dir).masterSecret
  for (const file of record.createdFiles)
    if (await exists(file)) {
      if (file === keep) {
        kept.push(file)
        continue
      }
      await rm(file, { force: true })
      removed.push(file)
    }
  await rm(paths.dir, { recursive: true, force: true })
  removed.push(paths.dir)
  if (record.createdWorkspace && (await readdir(dir)).length === 0) {
    await rmdir(dir)
    removed.push(dir)
  }
  return { workspace: dir, stoppedProcesses, removed, kept, warnings }
}

/** Mounts under the cluster's folder and loop devices over its disk images (none unless a user made them). */
async function releaseDiskImages(dir: string, runner: Runner): Promise<string[]> {
  const released: string[] = []
  const mounts = (await runner.run('findmnt', ['-rn', '-o', 'TARGET']).catch(() => ({ stdout: '' }))).stdout
  for (const target of mounts
    .split('\n')
    .filter((t) => t.startsWith(dir + '/'))
    .reverse()) {
    await runner.run('umount', ['-l', target])
    released.push(`mount ${target}`)
  }
  const loops = (await runner.run('losetup', ['-nl', '-O', 'NAME,BACK-FILE']).catch(() => ({ stdout: '' })))
    .stdout
  for (const line of loops.split('\n')) {
    const [device, file] = line.trim().split(/\s+/)
    if (device && file?.startsWith(dir + '/')) {
      await runner.run('losetup', ['-d', device])
      released.push(`loop device ${device}`)
    }
  }
  return released
}

/**
 * A workspace deleted while its cluster ran leaves no record, but every process of the cluster still
 * names the cluster's folder on its command line and carries the cluster's marker, which is also
 * the id in its network's names. Undefined when no process names the folder.
 */
async function downOrphaned(dir: string, runner: Runner): Promise<MiniDownResult | undefined> {
  const clusterDir = miniPaths(dir).dir
  const ids = await markersMentioning(CLUSTER_MARKER, `${clusterDir}/`)
  if (ids.length === 0) return undefined
  let stoppedProcesses = 0
  const removed: string[] = []
  for (const id of ids) {
    stoppedProcesses += await stopMarked(CLUSTER_MARKER, id)
    // namespaces and links are found by their names: the record's mode and prefix are not needed
    removed.push(...(await removeNetwork({ mode: 'netns', id, prefix: '' }, runner)))
  }
  removed.push(...(await releaseDiskImages(clusterDir, runner)))
  // the cluster's processes write their state as they stop (a node's boot.json), making the deleted
  // folders again: remove them, and the workspace too if nothing else is in it
  if (await exists(clusterDir)) {
    await rm(clusterDir, { recursive: true, force: true })
    removed.push(clusterDir)
    if ((await readdir(dir)).length === 0) {
      await rmdir(dir)
      removed.push(dir)
    }
  }
  return {
    workspace: dir,
    stoppedProcesses,
    removed,
    kept: [],
    warnings: [
      `${dir} was deleted while its cluster ran: its processes and network are removed; entries a \`mini up --merge-kubeconfig\` put into your kubeconfig stay (\`kubectl config delete-context\` removes them)`,
    ],
  }
}
