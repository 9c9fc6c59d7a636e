/**
 * Where the API contract fake listens and whom its certificate names: `mini` runs it on a node
 * network's address, and the kubeconfig naming that address must verify against its CA.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node'
import https from 'node:https'
import { checkServerIdentity, type PeerCertificate } from 'node:tls'
import { X509Certificate } from 'node:crypto'
import { expect } from '../support/chai.js'
import { freePort, ownLoopback } from '../support/ports.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { ADMIN_TOKEN } from '../../src/lib/simulator/fake-apiserver.js'

/** A GET over HTTPS that trusts only `ca`, checking the certificate against `servername` if given. */
function getVersion(url: string, ca: string, servername?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      `${url}/version`,
      { ca, servername, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, agent: false },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
  })
}

describe('FakeApiServer (contract fake): listen address and certificate names', () => {
  let api: FakeApiServer | undefined
  afterEach(async () => {
    await api?.stop()
    api = undefined
  })

  it('listens on 127.0.0.1 at a random port by default', async () => {
    api = await new FakeApiServer().start()
    expect(api.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/)
    expect(api.url).not.to.match(/:0$/)
  })

  it('listens on the host and port asked for, and a kubeconfig naming them verifies', async () => {
    const host = ownLoopback()
    const port = await freePort()
    api = await new FakeApiServer({ host, port, certHosts: ['api.mini.test', '127.0.9.9'] }).start()
    expect(api.url).to.equal(`https://${host}:${port}`)

    const kc = new KubeConfig()
    kc.loadFromString(api.kubeconfig())
    expect(kc.getCurrentCluster()?.server).to.equal(`https://${host}:${port}`)
    expect(kc.getCurrentCluster()?.skipTLSVerify).to.not.equal(true)
    const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace()
    expect(namespaces.items).to.be.an('array')
    expect(await getVersion(api.url, api.caPem)).to.equal(200)
  })

  it('names localhost, 127.0.0.1, its host and every cert host in the certificate, and nothing else', async () => {
    const host = ownLoopback()
    api = await new FakeApiServer({ host, certHosts: ['api.mini.test', '127.0.9.9'] }).start()
    const cert = new X509Certificate(api.caPem)
    for (const ip of ['127.0.0.1', host, '127.0.9.9']) expect(cert.checkIP(ip), ip).to.equal(ip)
    for (const dns of ['localhost', 'api.mini.test']) expect(cert.checkHost(dns), dns).to.equal(dns)
    expect(cert.checkIP('127.0.9.8')).to.equal(undefined)
    // TLS's own check, as every client runs it
    const peer = { subject: {}, subjectaltname: cert.subjectAltName } as unknown as PeerCertificate
    expect(checkServerIdentity('127.0.9.9', peer)).to.equal(undefined)
    expect(checkServerIdentity('127.0.9.8', peer)).to.be.an('error')

    // over the wire: the DNS name verifies, a name it does not carry is refused
    expect(await getVersion(api.url, api.caPem, 'api.mini.test')).to.equal(200)
    await expect(getVersion(api.url, api.caPem, 'other.mini.test')).to.be.rejectedWith(
      /does not match certificate's altnames/,
    )
  })

  it('comes back on the same host and port after goAway', async () => {
    const host = ownLoopback()
    api = await new FakeApiServer({ host }).start()
    const url = api.url
    await api.goAway('refuse')
    await api.comeBack()
    expect(api.url).to.equal(url)
    expect(await getVersion(api.url, api.caPem)).to.equal(200)
  })
})
