/**
 * The pieces every Kubernetes API caller shares: reading a kubeconfig, a bound on every request (an
 * API server that accepts and never answers must not hang a command or a daemon), and the HTTP
 * status of a client-node error.
 */
import {
  KubeConfig,
  Observable,
  type ConfigurationOptions,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node'
import { CliError } from '../errors/index.js'

/** How long one API request (connect, TLS, response and body) may take. */
export const API_REQUEST_TIMEOUT_MS = 30_000

export function readKubeconfig(kubeconfigPath: string): KubeConfig {
  const kc = new KubeConfig()
  try {
    kc.loadFromFile(kubeconfigPath)
  } catch (err) {
    throw new CliError(`reading kubeconfig ${kubeconfigPath}`, {
      hint: 'pass --kubeconfig PATH, or run in the workspace that holds constellation-admin.conf',
      cause: err,
    })
  }
  return kc
}

/** Aborts each request that takes longer than `ms`. */
export function requestTimeout(ms: number): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(ms))
          return new Observable(Promise.resolve(ctx))
        },
        post: (ctx: ResponseContext) => new Observable(Promise.resolve(ctx)),
      },
    ],
    middlewareMergeStrategy: 'append',
  }
}

/** The HTTP status of a client-node ApiException, if the error is one. */
export function statusOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'number')
    return err.code
  return undefined
}

/** The request's time bound ended it. */
export const timedOut = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError')

/** The request never got an HTTP answer: refused, reset, or timed out. */
export function isNoAnswer(err: unknown): boolean {
  if (timedOut(err)) return true
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined
  return typeof code === 'string' && ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE'].includes(code)
}
