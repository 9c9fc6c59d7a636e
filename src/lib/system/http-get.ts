/**
 * The one bounded download (the installer's components, signed measurements): one HTTP(S) GET on
 * node:http/https, following redirects, streaming the body to a file under a size limit and time limits (connect, idle, total). Node's global fetch
 * (undici) costs the bootstrapper ~55 ms and ~18 MB resident on first use, for what is one GET per
 * component; certificate verification stays Node's default (on).
 */
import { createWriteStream } from 'node:fs'
import { get as getHttp, type ClientRequest, type IncomingMessage } from 'node:http'
import { get as getHttps } from 'node:https'
import { Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'

export interface DownloadLimits {
  /** Bytes one download may write to disk. */
  maxBytes: number
  /** From starting a connection to its being established. */
  connectTimeoutMs: number
  /** No byte from the server for this long ends the download. */
  idleTimeoutMs: number
  /** The whole download, redirects included. */
  totalTimeoutMs: number
}

/** Kubernetes' largest binaries are ~120 MB; a mirror that stalls is given up on well before systemd would. */
export const DEFAULT_DOWNLOAD_LIMITS: DownloadLimits = {
  maxBytes: 1024 * 1024 * 1024,
  connectTimeoutMs: 30_000,
  idleTimeoutMs: 60_000,
  totalTimeoutMs: 15 * 60_000,
}

export interface HttpGetOptions {
  signal?: AbortSignal
  limits?: Partial<DownloadLimits>
}

export interface HttpResponse {
  status: number
  /** Bytes written to the file (a 200 body); other statuses write nothing. */
  bytes: number
}

/** GETs `url`; a 200 body goes to `file` (created exclusively, 0600). */
export type HttpGet = (url: string, file: string, opts?: HttpGetOptions) => Promise<HttpResponse>

/** The body is bigger than DownloadLimits.maxBytes: trying again will not help. */
export class DownloadTooLargeError extends Error {
  constructor(message: string, opts?: ErrorOptions) {
    super(message, opts)
    this.name = 'DownloadTooLargeError'
  }
}

export const MAX_REDIRECTS = 10
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

export const httpGet: HttpGet = async (url, file, opts = {}) => {
  const limits = { ...DEFAULT_DOWNLOAD_LIMITS, ...opts.limits }
  const overall = AbortSignal.timeout(limits.totalTimeoutMs)
  const signal = opts.signal ? AbortSignal.any([opts.signal, overall]) : overall
  try {
    let current = new URL(url)
    for (let redirects = 0; ; redirects++) {
      const res = await send(current, signal, limits)
      const status = res.statusCode ?? 0
      const location = res.headers.location
      if (status === 200) return { status, bytes: await saveBody(res, file, limits.maxBytes) }
      res.resume()
      if (!REDIRECT_STATUSES.has(status) || !location) return { status, bytes: 0 }
      if (redirects === MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`)
      const next = new URL(location, current)
      if (next.protocol !== 'http:' && next.protocol !== 'https:')
        throw new Error(`redirect to unsupported scheme ${next.protocol}`)
      if (current.protocol === 'https:' && next.protocol === 'http:')
        throw new Error(`refusing a redirect from https to ${next.href}`)
      current = next
    }
  } catch (cause) {
    const why = opts.signal?.aborted
      ? 'aborted'
      : overall.aborted
        ? `not finished within ${limits.totalTimeoutMs} ms`
        : cause instanceof Error
          ? cause.message
          : String(cause)
    const Failure = cause instanceof DownloadTooLargeError ? DownloadTooLargeError : Error
    throw new Failure(`GET ${url}: ${why}`, { cause })
  }
}

function send(url: URL, signal: AbortSignal, limits: DownloadLimits): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? getHttps : url.protocol === 'http:' ? getHttp : undefined
    if (!get) return reject(new Error(`unsupported URL scheme ${url.protocol}`))
    let response: IncomingMessage | undefined
    const req = get(url, { signal }, (res) => resolve((response = res))).once('error', reject)
    limitConnect(req, limits.connectTimeoutMs)
    // The socket's idle timer runs through connecting, headers and body alike.
    req.setTimeout(limits.idleTimeoutMs, () => {
      const idle = new Error(`no data from the server for ${limits.idleTimeoutMs} ms`)
      response?.destroy(idle) // mid-body: the body's reader gets this error, not "aborted"
      req.destroy(idle)
    })
  })
}

function limitConnect(req: ClientRequest, timeoutMs: number): void {
  req.once('socket', (socket) => {
    if (!socket.connecting) return
    const timer = setTimeout(
      () => req.destroy(new Error(`no connection within ${timeoutMs} ms`)),
      timeoutMs,
    ).unref()
    socket.once('connect', () => clearTimeout(timer))
    socket.once('close', () => clearTimeout(timer))
  })
}

async function saveBody(res: IncomingMessage, file: string, maxBytes: number): Promise<number> {
  const declared = Number(res.headers['content-length'] ?? NaN)
  if (declared > maxBytes) {
    res.destroy()
    throw new DownloadTooLargeError(`the body is ${declared} bytes, over the limit of ${maxBytes}`)
  }
  let bytes = 0
  const limit = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      bytes += chunk.length
      if (bytes > maxBytes)
        return callback(new DownloadTooLargeError(`the body is over the limit of ${maxBytes} bytes`))
      callback(null, chunk)
    },
  })
  await pipeline(res, limit, createWriteStream(file, { flags: 'wx', mode: 0o600 }))
  if (!res.complete) throw new Error('connection closed mid-body')
  return bytes
}
