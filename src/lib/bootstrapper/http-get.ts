/**
 * The installer's download: one HTTP(S) GET on node:http/https, following redirects. Node's global
 * fetch (undici) costs the bootstrapper ~55 ms and ~18 MB resident on first use, for what is one
 * GET per component; certificate verification stays Node's default (on).
 */
import { get as getHttp, type IncomingMessage } from 'node:http'
import { get as getHttps } from 'node:https'

export interface HttpResponse {
  status: number
  body: Buffer
}

export type HttpGet = (url: string, signal?: AbortSignal) => Promise<HttpResponse>

export const MAX_REDIRECTS = 10
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

export const httpGet: HttpGet = async (url, signal) => {
  let current = new URL(url)
  for (let redirects = 0; ; redirects++) {
    const res = await send(current, signal)
    const status = res.statusCode ?? 0
    const location = res.headers.location
    if (!REDIRECT_STATUSES.has(status) || !location) return { status, body: await readBody(res) }
    res.resume()
    if (redirects === MAX_REDIRECTS) throw new Error(`GET ${url}: more than ${MAX_REDIRECTS} redirects`)
    const next = new URL(location, current)
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw new Error(`GET ${url}: redirect to unsupported scheme ${next.protocol}`)
    if (current.protocol === 'https:' && next.protocol === 'http:')
      throw new Error(`GET ${url}: refusing a redirect from https to ${next.href}`)
    current = next
  }
}

function send(url: URL, signal?: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? getHttps : url.protocol === 'http:' ? getHttp : undefined
    if (!get) return reject(new Error(`unsupported URL scheme ${url.protocol}`))
    get(url, { signal }, resolve).once('error', reject)
  })
}

function readBody(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    res.on('data', (chunk: Buffer) => chunks.push(chunk))
    res.once('end', () =>
      res.complete ? resolve(Buffer.concat(chunks)) : reject(new Error('connection closed mid-body')),
    )
    res.once('error', reject)
  })
}
