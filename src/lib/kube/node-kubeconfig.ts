/**
 * The kubeconfig a control plane's services use: kubeadm's admin.conf (or any kubeconfig that
 * authenticates with a client certificate or a bearer token). Its current context's cluster and
 * user, with their certificates read from `-data` fields or files. Exec plugins and auth providers
 * are refused by name: a node has no cloud CLI to run.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { CliError } from '../errors/index.js'
import { parseYaml, readYamlFile } from '../yaml/index.js'

export interface NodeKubeconfig {
  /** https://HOST:PORT */
  server: string
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
  token?: string
  insecureSkipTlsVerify: boolean
}

type Entry = { name?: string } & Record<string, unknown>
const named = (list: unknown, name: unknown): Entry | undefined =>
  (Array.isArray(list) ? (list as Entry[]) : []).find((e) => e?.name === name)

export async function readNodeKubeconfig(file: string): Promise<NodeKubeconfig> {
  const text = await readYamlFile(file, { what: 'kubeconfig' })
  const doc = (parseYaml(text, file).value ?? {}) as Record<string, unknown>
  const fail = (why: string) => new CliError(`kubeconfig ${file}: ${why}`)
  const context = named(doc.contexts, doc['current-context'])?.context as Record<string, unknown> | undefined
  if (!context) throw fail('no current context')
  const cluster = named(doc.clusters, context.cluster)?.cluster as Record<string, unknown> | undefined
  const user = (named(doc.users, context.user)?.user ?? {}) as Record<string, unknown>
  if (!cluster || typeof cluster.server !== 'string') throw fail(`context's cluster has no server`)
  for (const unsupported of ['exec', 'auth-provider', 'username'])
    if (user[unsupported] !== undefined)
      throw fail(`the user authenticates with ${unsupported}; a node uses a client certificate or a token`)
  const dir = path.dirname(file)
  const material = async (data: unknown, ref: unknown): Promise<Buffer | undefined> => {
    if (typeof data === 'string') return Buffer.from(data, 'base64')
    if (typeof ref === 'string') return readFile(path.resolve(dir, ref))
    return undefined
  }
  const tokenFile = typeof user.tokenFile === 'string' ? path.resolve(dir, user.tokenFile) : undefined
  return {
    server: cluster.server.replace(/\/+$/, ''),
    ca: await material(cluster['certificate-authority-data'], cluster['certificate-authority']),
    cert: await material(user['client-certificate-data'], user['client-certificate']),
    key: await material(user['client-key-data'], user['client-key']),
    token:
      typeof user.token === 'string'
        ? user.token
        : tokenFile
          ? (await readFile(tokenFile, 'utf8')).trim()
          : undefined,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  }
}
