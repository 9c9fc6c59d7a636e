import { readFile, readdir } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import path from 'node:path'
import { makeTempDir } from '../support/temp.js'
import { expect } from '../support/chai.js'
import { localhostCert } from '../support/tls-cert.js'
import { chainMessage } from '../../src/lib/errors/index.js'
import { DownloadTooLargeError, httpGet, MAX_REDIRECTS } from '../../src/lib/system/http-get.js'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function listen(server: Server, scheme: 'http' | 'https'): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('httpGet (the installer download on node:http/https)', () => {
  const servers: Server[] = []
  const sockets = new Set<Socket>()
  const serve = (handler: Handler) => {
    const server = createServer(handler)
    server.on('connection', (s) => sockets.add(s.once('close', () => sockets.delete(s))))
    servers.push(server)
    return listen(server, 'http')
  }
  let dir: string
  let cleanup: () => Promise<void>
  let n = 0
  const file = () => path.join(dir, `download-${n++}`)
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(async () => {
    for (const s of sockets) s.destroy() // a server that never answers keeps its sockets
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))))
    await cleanup()
  })

  it('returns status and body, and follows absolute and relative redirects', async () => {
    let base = ''
    base = await serve((req, res) => {
      if (req.url === '/a') return res.writeHead(302, { location: `${base}/b` }).end()
      if (req.url === '/b') return res.writeHead(301, { location: '/c' }).end('moved')
      if (req.url === '/c') return res.writeHead(200).end('component bytes')
      res.writeHead(404).end('no such thing')
    })
    const target = file()
    const ok = await httpGet(`${base}/a`, target)
    expect(ok).to.deep.equal({ status: 200, bytes: 15 })
    expect(await readFile(target, 'utf8')).to.equal('component bytes')
    const missing = await httpGet(`${base}/x`, file())
    expect(missing).to.deep.equal({ status: 404, bytes: 0 })
    expect(await readdir(dir)).to.have.length(1)
  })

  it(`gives up after ${MAX_REDIRECTS} redirects, naming the URL`, async () => {
    const base = await serve((req, res) => res.writeHead(307, { location: req.url + 'x' }).end())
    await expect(httpGet(`${base}/loop`, file())).to.be.rejectedWith(
      `GET ${base}/loop: more than ${MAX_REDIRECTS} redirects`,
    )
  })

  it('refuses a redirect from https to http and a server whose certificate does not verify', async () => {
    const { certPem, keyPem } = localhostCert()
    let plain = ''
    plain = await serve((_req, res) => res.writeHead(200).end('plain'))
    const tls = createHttpsServer({ cert: certPem, key: keyPem }, (_req, res) =>
      res.writeHead(302, { location: `${plain}/k` }).end(),
    )
    servers.push(tls)
    const base = await listen(tls, 'https')
    await expect(httpGet(`${base}/k`, file())).to.be.rejectedWith(/self-signed|self signed/)
    const trusting = (url: string) =>
      import('node:https').then(
        ({ globalAgent }) =>
          new Promise<void>((resolve, reject) => {
            // positive control: with the test CA trusted the server answers; our httpGet never trusts it
            globalAgent.options.ca = certPem
            httpGet(url, file())
              .then(() => reject(new Error('downgrade followed')))
              .catch((err: unknown) =>
                String(err).includes('refusing a redirect from https') ? resolve() : reject(err),
              )
              .finally(() => delete globalAgent.options.ca)
          }),
      )
    await trusting(`${base}/k`)
  })

  it('reports a refused connection as an error (the installer retries it)', async () => {
    const base = await serve(() => {})
    servers[0]!.close()
    servers.length = 0
    const err = await httpGet(`${base}/k`, file()).then(
      () => undefined,
      (e: unknown) => e,
    )
    // retryable: a plain Error (the installer gives up at once only on DownloadTooLargeError or abort)
    expect(err).to.be.instanceOf(Error).and.not.to.be.instanceOf(DownloadTooLargeError)
    expect((err as Error).message).to.match(
      new RegExp(`^GET ${base}/k: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+$`),
    )
    expect(((err as Error).cause as NodeJS.ErrnoException).code).to.equal('ECONNREFUSED')
  })

  const limits = { maxBytes: 64 * 1024, connectTimeoutMs: 5_000, idleTimeoutMs: 300, totalTimeoutMs: 1_500 }
  it('refuses a body over the size limit, declared or streamed, and keeps at most the limit on disk', async () => {
    const big = Buffer.alloc(limits.maxBytes + 1, 1)
    const base = await serve((req, res) => {
      if (req.url === '/declared') return res.writeHead(200, { 'content-length': big.length }).end(big)
      res.writeHead(200) // chunked: no length up front
      for (let i = 0; i < 4; i++) res.write(big)
      res.end()
    })
    for (const url of [`${base}/declared`, `${base}/chunked`]) {
      const target = file()
      const err = await httpGet(url, target, { limits }).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(DownloadTooLargeError)
      expect(chainMessage(err)).to.match(new RegExp(`^GET ${url}: the body is .*over the limit of 65536`))
      const written = await readFile(target).catch(() => Buffer.alloc(0))
      expect(written.length).to.be.at.most(limits.maxBytes)
    }
  })

  it('gives up on a server that accepts and never answers, and on one that stops mid-body', async () => {
    const base = await serve((req, res) => {
      if (req.url === '/silent') return // never answers
      res.writeHead(200, { 'content-length': 100 })
      res.write('partial') // then nothing
    })
    await expect(httpGet(`${base}/silent`, file(), { limits })).to.be.rejectedWith(
      `GET ${base}/silent: no data from the server for 300 ms`,
    )
    await expect(httpGet(`${base}/stall`, file(), { limits })).to.be.rejectedWith(
      `GET ${base}/stall: no data from the server for 300 ms`,
    )
  })

  it('gives up when the whole download takes longer than its total limit (a trickling server)', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200)
      const drip = setInterval(() => res.write('x'), 50)
      res.once('close', () => clearInterval(drip))
    })
    await expect(httpGet(`${base}/drip`, file(), { limits })).to.be.rejectedWith(
      `GET ${base}/drip: not finished within 1500 ms`,
    )
  })

  it('stops at once when its signal is aborted (the daemon is stopping)', async () => {
    let requested = () => {}
    const arrived = new Promise<void>((r) => (requested = r))
    const base = await serve(() => requested())
    const stop = new AbortController()
    const download = httpGet(`${base}/k`, file(), { signal: stop.signal })
    await arrived
    stop.abort()
    await expect(download).to.be.rejectedWith(`GET ${base}/k: aborted`)
  })
})
