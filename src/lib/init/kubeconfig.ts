/** The admin kubeconfig the node returns: pointed at the cluster endpoint, and merged into ~/.kube/config on request. */
import { CliError } from '../errors/index.js'
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
  url.hostname = endpointHost.includes(':') ? `[${endpointHost}]` : endpointHost
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
          1,
          'rename or remove that entry, or use constellation-admin.conf directly; nothing was changed',
        )
    }
    base[key] = list
  }
  if (ours['current-context']) base['current-context'] = ours['current-context']
  return stringifyYaml(base)
}
