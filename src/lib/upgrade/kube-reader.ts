/**
 * The upgrade's reads of the cluster through kube's cluster client: its Kubernetes version, a
 * ConfigMap (kubeadm's cluster configuration), and paged cluster-wide lists for the backup. Every
 * request has a timeout and transient failures are retried: an API server that accepts and never
 * answers must not hang the plan or the backup.
 */
import { CliError, ExitCode } from '../errors/index.js'
import {
  API_REQUEST_TIMEOUT_MS,
  isNoAnswer as noHttpAnswer,
  openClusterClient,
  statusOf,
  type KubeconfigSource,
} from '../kube/index.js'
import { retry } from '../system/index.js'

export interface ListPage {
  items: unknown[]
  continueToken?: string
}

/** What the plan and the backup read from the API; a 404 is undefined. */
export interface ClusterReader {
  /** The API server's gitVersion, e.g. v1.31.13. */
  serverVersion(): Promise<string>
  configMapData(namespace: string, name: string): Promise<Record<string, string> | undefined>
  /** One page of a cluster-wide list. */
  listPage(
    group: string,
    version: string,
    plural: string,
    limit: number,
    continueToken?: string,
  ): Promise<ListPage | undefined>
}

export interface ReaderOptions {
  requestTimeoutMs?: number
  /** Total attempts for one page; transient failures (5xx, 429, connection errors) are retried. */
  attempts?: number
  initialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

/** Async: the client library is imported on first use, so that init (which imports this domain) stays quick. */
export async function createClusterReader(
  source: KubeconfigSource,
  opts: ReaderOptions = {},
): Promise<ClusterReader> {
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const api = await openClusterClient(source, { requestTimeoutMs: timeoutMs })

  /** One request under the timeout, retried while transient; 404 is undefined. */
  async function read<T>(what: string, request: () => Promise<T>): Promise<T | undefined> {
    return retry(
      async () => {
        try {
          return await request()
        } catch (err) {
          if (statusOf(err) === 404) return undefined
          if (err instanceof Error && err.name === 'AbortError')
            throw new RequestTimeoutError(`the API server did not answer within ${timeoutMs / 1000} s`)
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
      // No answer at all is "unreachable" (exit 3); an answer we did not like is a failure.
      if (isNoAnswer(err)) throw new CliError(what, { exitCode: ExitCode.Unreachable, cause: err })
      throw new Error(what, { cause: err })
    })
  }

  return {
    async serverVersion() {
      const gitVersion = await read('reading the Kubernetes version', () => api.serverVersion())
      if (!gitVersion) throw new Error('reading the Kubernetes version: the API server sent none')
      return gitVersion
    },
    async configMapData(namespace, name) {
      const cm = await read(`reading ConfigMap ${namespace}/${name}`, () =>
        api.readConfigMap(namespace, name),
      )
      return cm ? (cm.data ?? {}) : undefined
    },
    async listPage(group, version, plural, limit, continueToken) {
      const what = `listing ${plural}.${group}/${version}`
      const raw = await read(what, () =>
        api.listCustomObjects({ group, version, plural }, { limit, continueToken }),
      )
      return raw === undefined ? undefined : toPage(raw, what)
    },
  }
}

class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError'
}

function toPage(raw: unknown, what: string): ListPage {
  const list = raw as { items?: unknown; metadata?: { continue?: unknown } } | null
  if (!list || !Array.isArray(list.items)) throw new Error(`${what}: the response has no items list`)
  const token = list.metadata?.continue
  return { items: list.items, continueToken: typeof token === 'string' && token ? token : undefined }
}

function isTransient(err: unknown): boolean {
  const status = statusOf(err)
  if (status !== undefined) return status === 429 || status >= 500
  return isNoAnswer(err)
}

const isNoAnswer = (err: unknown): boolean => err instanceof RequestTimeoutError || noHttpAnswer(err)
