import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { runProcess } from '../../src/lib/system/process.js'
import { caCertHash, CONTROL_PLANE_PKI_FILES, loadClusterCa } from '../../src/lib/joinservice/cluster-ca.js'

/** Runs a shell pipeline of openssl and coreutils: the reference the pin must agree with. */
async function sh(script: string, cwd: string): Promise<string> {
  const res = await runProcess('sh', ['-ec', script], { cwd })
  if (res.code !== 0) throw new Error(`${script}: ${res.stderr}`)
  return res.stdout.trim()
}

describe('cluster CA', () => {
  let dir: string
  let cleanup: () => Promise<void>
  beforeEach(async () => ({ dir, cleanup } = await makeTempDir()))
  afterEach(() => cleanup())

  const keyTypes: Record<string, string> = {
    'RSA 2048 (as kubeadm makes it)': '-newkey rsa:2048',
    'ECDSA P-256': '-newkey ec -pkeyopt ec_paramgen_curve:P-256',
  }
  for (const [name, newkey] of Object.entries(keyTypes))
    it(`pins the CA's public key as openssl computes it: ${name}`, async () => {
      await sh(
        `openssl req -x509 ${newkey} -nodes -keyout ca.key -out ca.crt -subj /CN=kubernetes -days 1`,
        dir,
      )
      const want = await sh(
        'openssl x509 -in ca.crt -pubkey -noout | openssl pkey -pubin -outform der | sha256sum | cut -d" " -f1',
        dir,
      )
      expect(want).to.match(/^[0-9a-f]{64}$/)
      expect(caCertHash(await readFile(path.join(dir, 'ca.crt')))).to.equal(`sha256:${want}`)
    })

  it('loads the eight kubeadm PKI files a control plane needs, and the pin of ca.crt', async () => {
    const pki = path.join(dir, 'pki')
    await mkdir(path.join(pki, 'etcd'), { recursive: true })
    await sh(
      'openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -subj /CN=kubernetes -days 1',
      pki,
    )
    for (const name of CONTROL_PLANE_PKI_FILES.filter((n) => !n.startsWith('ca.')))
      await writeFile(path.join(pki, name), `contents of ${name}`)
    const ca = await loadClusterCa(pki)
    expect(ca.controlPlaneFiles.map((f) => f.name)).to.deep.equal([
      'ca.crt',
      'ca.key',
      'sa.key',
      'sa.pub',
      'front-proxy-ca.crt',
      'front-proxy-ca.key',
      'etcd/ca.crt',
      'etcd/ca.key',
    ])
    expect(ca.controlPlaneFiles[7]?.data.toString()).to.equal('contents of etcd/ca.key')
    expect(ca.caKeyPem).to.contain('PRIVATE KEY')
    expect(ca.caCertHash).to.equal(caCertHash(ca.caCertPem))
  })

  it('names the missing file', async () => {
    await expect(loadClusterCa(path.join(dir, 'nowhere'))).to.be.rejectedWith(
      /nowhere\/ca\.crt does not exist/,
    )
  })

  it('says when ca.crt is not a certificate', async () => {
    const pki = path.join(dir, 'pki')
    await mkdir(path.join(pki, 'etcd'), { recursive: true })
    for (const name of CONTROL_PLANE_PKI_FILES) await writeFile(path.join(pki, name), 'garbage')
    await expect(loadClusterCa(pki)).to.be.rejectedWith(/pki\/ca\.crt is not a PEM certificate/)
  })
})
