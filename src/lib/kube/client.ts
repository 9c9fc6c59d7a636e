/**
 * What every Kubernetes API caller shares, without loading a client library: the bound on every
 * request (an API server that accepts and never answers must not hang a command or a daemon) and
 * how an error says what happened.
 */
import { CliError, ExitCode, messageOf } from '../errors/index.js'
import { formatDuration } from '../system/index.js'

/** How long one API request (connect, TLS, response and body) may take. */
export const API_REQUEST_TIMEOUT_MS = 30_000

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

/** A request answered with an HTTP error: the status says what to do. */
export class KubeApiError extends CliError {
  constructor(
    readonly what: string,
    readonly status: number,
  ) {
    super(`${what}: HTTP ${status}`, {
      hint:
        status === 401 || status === 403
          ? 'check that the kubeconfig holds credentials that may do this (the cluster admin)'
          : undefined,
    })
    this.name = 'KubeApiError'
  }
}

/**
 * Runs one request and says what failed: an HTTP status is a KubeApiError naming the request and
 * the server (never the response body, which can echo a Secret back), a 404 may mean "absent", and
 * no answer at all is "unreachable" (exit 3).
 */
export function requestCaller(server: string, timeoutMs: number, kubeconfigPath?: string) {
  return async <T>(what: string, run: () => Promise<T>, absentOn404 = false): Promise<T | undefined> => {
    try {
      return await run()
    } catch (err) {
      const status = statusOf(err)
      if (status === 404 && absentOn404) return undefined
      if (status !== undefined) throw new KubeApiError(`${what} at ${server}`, status)
      const why = timedOut(err)
        ? `no answer within ${formatDuration(timeoutMs)}`
        : messageOf(err).split('\n')[0]
      throw new CliError(`${what} at ${server}: ${why}`, {
        exitCode: ExitCode.Unreachable,
        // upgrade's words (helm's list) for the same cluster: the file to look at
        hint: kubeconfigPath
          ? `check that the cluster in ${kubeconfigPath} is reachable from here`
          : 'check that the kubeconfig points at the cluster and that it is reachable from here',
      })
    }
  }
}
