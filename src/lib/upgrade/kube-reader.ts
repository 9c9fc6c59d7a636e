/**
 * Paged reads of cluster-wide resource lists through @kubernetes/client-node, with retries and a
 * timeout on every request: an API server that accepts and never answers must not hang the backup.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node'
import { CliError, ExitCode } from '../errors/index.js'
import {
  API_REQUEST_TIMEOUT_MS,
  isNoAnswer as noHttpAnswer,
  loadClientNode,
  statusOf,
} from '../kube/index.js'
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
  requestTimeoutMs?: number
  /** Total attempts for one page; transient failures (5xx, 429, connection errors) are retried. */
  attempts?: number
  initialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export function createClusterReader(kc: KubeConfig, opts: ReaderOptions = {}): ClusterReader {
  const api = kc.makeApiClient(CustomObjectsApi)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  return {
    async listPage(group, version, plural, limit, continueToken) {
      const what = `listing ${plural}.${group}/${version}`
      return retry(
        async () => {
          try {
            const { requestTimeout } = await loadClientNode()
            const raw: unknown = await api.listClusterCustomObject(
              { group, version, plural, limit, _continue: continueToken },
              requestTimeout(timeoutMs),
            )
            return toPage(raw, what)
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
