import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { expect } from '../support/chai.js'
import { localhostCert } from '../support/tls-cert.js'
import { httpGet, MAX_REDIRECTS } from '../../src/lib/bootstrapper/index.js'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function listen(server: Server, scheme: 'http' | 'https'): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('httpGet (the installer download on node:http/https)', () => {
  const servers: Server[] = []
  const serve = (handler: Handler) => {
    const server = createServer(handler)
    servers.push(server)
    return listen(server, 'http')
  }
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))))
  })

  it('returns status and body, and follows absolute and relative redirects', async () => {
    let base = ''
    base = await serve((req, res) => {
      if (req.url === '/a') return res.writeHead(302, { location: `${base}/b` }).end()
      if (req.url === '/b') return res.writeHead(301, { location: '/c' }).end('moved')
      if (req.url === '/c') return res.writeHead(200).end('component bytes')
      res.writeHead(404).end('no such thing')
    })
    const ok = await httpGet(`${base}/a`)
    expect(ok.status).to.equal(200)
    expect(ok.body.toString()).to.equal('component bytes')
    const missing = await httpGet(`${base}/x`)
    expect(missing.status).to.equal(404)
  })

  it(`gives up after ${MAX_REDIRECTS} redirects, naming the URL`, async () => {
    const base = await serve((req, res) => res.writeHead(307, { location: req.url + 'x' }).end())
    await expect(httpGet(`${base}/loop`)).to.be.rejectedWith(
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
    await expect(httpGet(`${base}/k`)).to.be.rejectedWith(/self-signed|self signed/)
    const trusting = (url: string) =>
      import('node:https').then(
        ({ globalAgent }) =>
          new Promise<void>((resolve, reject) => {
            // positive control: with the test CA trusted the server answers; our httpGet never trusts it
            globalAgent.options.ca = certPem
            httpGet(url)
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
    await expect(httpGet(`${base}/k`)).to.be.rejected
  })
})
