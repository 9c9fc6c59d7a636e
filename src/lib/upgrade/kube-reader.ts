/** Paged reads of cluster-wide resource lists through @kubernetes/client-node, with retries. */
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node'
import { CliError } from '../errors/index.js'
import { retry } from '../system/index.js'

export interface ListPage {
  items: unknown[]
  continueToken?: string
}

/** What the backup needs from the API: one page of a cluster-wide list, 404 as undefined. */
export interface ClusterReader {
  listPage(
    group: string,
    version: string,
    plural: string,
    limit: number,
    continueToken?: string,
  ): Promise<ListPage | undefined>
}

export interface ReaderOptions {
  /** Total attempts for one page; transient failures (5xx, 429, connection errors) are retried. */
  attempts?: number
  initialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export function readKubeconfig(kubeconfigPath: string): KubeConfig {
  const kc = new KubeConfig()
  try {
    kc.loadFromFile(kubeconfigPath)
  } catch (err) {
    throw new CliError(
      `reading kubeconfig ${kubeconfigPath}`,
      1,
      'pass --kubeconfig PATH, or run in the workspace that holds constellation-admin.conf',
      { cause: err },
    )
  }
  return kc
}

export function createClusterReader(kc: KubeConfig, opts: ReaderOptions = {}): ClusterReader {
  const api = kc.makeApiClient(CustomObjectsApi)
  return {
    async listPage(group, version, plural, limit, continueToken) {
      const what = `listing ${plural}.${group}/${version}`
      return retry(
        async () => {
          try {
            const raw: unknown = await api.listClusterCustomObject({
              group,
              version,
              plural,
              limit,
              _continue: continueToken,
            })
            return toPage(raw, what)
          } catch (err) {
            if (statusOf(err) === 404) return undefined
            throw err
          }
        },
        {
          attempts: opts.attempts ?? 4,
          initialDelayMs: opts.initialDelayMs ?? 500,
          maxDelayMs: 5_000,
          retryable: isTransient,
          sleep: opts.sleep,
        },
      ).catch((err: unknown) => {
        throw new Error(what, { cause: err })
      })
    },
  }
}

function toPage(raw: unknown, what: string): ListPage {
  const list = raw as { items?: unknown; metadata?: { continue?: unknown } } | null
  if (!list || !Array.isArray(list.items)) throw new Error(`${what}: the response has no items list`)
  const token = list.metadata?.continue
  return { items: list.items, continueToken: typeof token === 'string' && token ? token : undefined }
}

/** The HTTP status of a client-node ApiException, if the error is one. */
function statusOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'number')
    return err.code
  return undefined
}

function isTransient(err: unknown): boolean {
  const status = statusOf(err)
  if (status !== undefined) return status === 429 || status >= 500
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined
  return typeof code === 'string' && ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE'].includes(code)
}
