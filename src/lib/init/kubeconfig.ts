/** The admin kubeconfig the node returns: pointed at the cluster endpoint, and merged into ~/.kube/config on request. */
import { chmod, lstat, readFile, realpath } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { CliError, chainMessage } from '../errors/index.js'
import { formatHostPort, lstatIfPresent, SECRET_FILE_MODE, writeFileAtomic } from '../system/index.js'
import { parseYaml, stringifyYaml } from '../yaml/index.js'

interface Named {
  name: string
  [key: string]: unknown
}
interface Kubeconfig {
  clusters?: Array<Named & { cluster?: { server?: string } }>
  contexts?: Named[]
  users?: Named[]
  'current-context'?: string
  [key: string]: unknown
}

function parseKubeconfig(text: string, file: string): Kubeconfig {
  const value = parseYaml(text, file).value
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new CliError(`${file}: not a kubeconfig`)
  return value as Kubeconfig
}

/** Exactly one cluster; its server host becomes the cluster endpoint host, the port stays. */
export function pointAtEndpoint(kubeconfig: Buffer, endpointHost: string): string {
  const doc = parseKubeconfig(kubeconfig.toString('utf8'), 'kubeconfig from the node')
  const clusters = doc.clusters ?? []
  if (clusters.length !== 1)
    throw new Error(`kubeconfig from the node has ${clusters.length} clusters, want 1`)
  const cluster = clusters[0]?.cluster
  if (!cluster?.server) throw new Error('kubeconfig from the node has no server URL')
  const url = new URL(cluster.server)
  url.hostname = formatHostPort(endpointHost)
  cluster.server = url.toString().replace(/\/$/, '')
  return stringifyYaml(doc)
}

/** Adds our cluster, user and context to an existing kubeconfig; refuses to replace a different entry of the same name. */
export function mergeKubeconfig(existingText: string | undefined, oursText: string, file: string): string {
  const ours = parseKubeconfig(oursText, 'constellation-admin.conf')
  const base: Kubeconfig = existingText?.trim()
    ? parseKubeconfig(existingText, file)
    : { apiVersion: 'v1', kind: 'Config' }
  for (const key of ['clusters', 'contexts', 'users'] as const) {
    const list = [...(base[key] ?? [])]
    for (const entry of ours[key] ?? []) {
      const same = list.find((e) => e.name === entry.name)
      if (!same) list.push(entry)
      else if (JSON.stringify(same) !== JSON.stringify(entry))
        throw new CliError(
          `${file} already has a different ${key.slice(0, -1)} named ${JSON.stringify(entry.name)}`,
          { hint: 'rename or remove that entry, or use constellation-admin.conf directly' },
        )
    }
    base[key] = list
  }
  if (ours['current-context']) base['current-context'] = ours['current-context']
  return stringifyYaml(base)
}

/**
 * Names the cluster, user and context `<cluster name>-<first 8 hex of the cluster ID>` (user:
 * `…-admin`), so that two clusters of the default name never collide in one kubeconfig.
 */
export function nameEntriesAfterCluster(text: string, entryName: string): string {
  const doc = parseKubeconfig(text, 'constellation-admin.conf')
  const rename = (list: Named[] | undefined, to: (old: string, one: boolean) => string) => {
    const names = new Map<string, string>()
    for (const e of list ?? []) {
      const renamed = to(e.name, (list ?? []).length === 1)
      names.set(e.name, renamed)
      e.name = renamed
    }
    return names
  }
  const clusters = rename(doc.clusters, (old, one) => (one ? entryName : `${entryName}-${old}`))
  const users = rename(doc.users, (old, one) => (one ? `${entryName}-admin` : `${entryName}-${old}`))
  const contexts = rename(doc.contexts, (old, one) => (one ? entryName : `${entryName}-${old}`))
  for (const c of doc.contexts ?? []) {
    const ctx = c.context as { cluster?: string; user?: string } | undefined
    if (ctx?.cluster) ctx.cluster = clusters.get(ctx.cluster) ?? ctx.cluster
    if (ctx?.user) ctx.user = users.get(ctx.user) ?? ctx.user
  }
  const current = doc['current-context']
  if (current) doc['current-context'] = contexts.get(current) ?? current
  return stringifyYaml(doc)
}

/**
 * Merges into $KUBECONFIG's first file or ~/.kube/config. A symlinked kubeconfig is written
 * through to its target (atomically, in the target's directory), keeping the file's mode.
 */
export async function mergeIntoUserKubeconfig(ours: string, file: string): Promise<void> {
  const entry = await lstatIfPresent(file).catch((err: unknown) => {
    throw new CliError(`reading ${file}: ${chainMessage(err)}`)
  })
  const target = entry?.isSymbolicLink()
    ? await realpath(file).catch((err: unknown) => {
        throw new CliError(`${file} is a symbolic link that cannot be followed: ${chainMessage(err)}`)
      })
    : file
  const existing = entry
    ? await readFile(target, 'utf8').catch((err: unknown) => {
        throw new CliError(`reading ${target}: ${chainMessage(err)}`)
      })
    : undefined
  const mode = entry ? (await lstat(target)).mode & 0o777 : SECRET_FILE_MODE
  await writeFileAtomic(target, mergeKubeconfig(existing, ours, file), mode)
  await chmod(target, mode) // the umask may have narrowed the mode the file had
}

/** The names one merge added: the cluster, its user and its context. */
export interface MergedEntries {
  cluster: string
  user: string
  context: string
}

/**
 * The kubeconfig without the merged entries of those names, everything else as it was; a current
 * context that named the removed one is unset (as `kind delete cluster` does), not left dangling.
 */
export function removeKubeconfigEntries(text: string, entries: MergedEntries, file: string): string {
  const doc = parseKubeconfig(text, file)
  const drop = { clusters: entries.cluster, users: entries.user, contexts: entries.context } as const
  for (const key of ['clusters', 'contexts', 'users'] as const)
    if (doc[key]) doc[key] = doc[key].filter((e) => e.name !== drop[key])
  if (doc['current-context'] === entries.context) delete doc['current-context']
  return stringifyYaml(doc)
}

/**
 * Takes a merge out of `file` again (symlinks followed, mode kept, atomically, as the merge wrote
 * it); false when there is no such file.
 */
export async function removeFromUserKubeconfig(file: string, entries: MergedEntries): Promise<boolean> {
  const entry = await lstatIfPresent(file)
  if (!entry) return false
  const target = entry.isSymbolicLink() ? await realpath(file) : file
  const mode = (await lstat(target)).mode & 0o777
  await writeFileAtomic(target, removeKubeconfigEntries(await readFile(target, 'utf8'), entries, file), mode)
  await chmod(target, mode)
  return true
}

/** $KUBECONFIG's first file, or ~/.kube/config: where kubectl looks first. */
export function userKubeconfigPath(env: NodeJS.ProcessEnv): string {
  return (
    env.KUBECONFIG?.split(path.delimiter).find((f) => f !== '') ??
    path.join(env.HOME ?? os.homedir(), '.kube', 'config')
  )
}
