import { execFile } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { parse } from 'yaml'
import { expect } from '../support/chai.js'
import { CA_FILES, caCertHash, loadOrCreateAuthorities } from '../../src/lib/bootstrapdata/certs.js'
import { writeAllOrNothing } from '../../src/lib/bootstrapdata/staged-writes.js'
import { createAdminKubeconfig } from '../../src/lib/bootstrapdata/kubeconfig.js'
import { FIXED_NOW, FIXTURES, tempWorkspace } from './helpers.js'

const run = promisify(execFile)
const ALL_FILES = Object.values(CA_FILES).flatMap((f) => [f.cert, f.key])

describe('bootstrap data CA set (kubeadm layout in --ca-dir)', () => {
  let ws: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => (ws = await tempWorkspace(false)))
  afterEach(async () => ws.cleanup())

  it('generates every pair when absent: keys 0600, CAs that openssl accepts, and reuses them next time', async () => {
    const caDir = path.join(ws.dir, 'pki')
    const first = await loadOrCreateAuthorities(caDir, { generate: true, now: FIXED_NOW })
    expect(first.toWrite.map((f) => path.relative(caDir, f.file)).sort()).to.deep.equal([...ALL_FILES].sort())
    await writeAllOrNothing(first.toWrite)
    for (const f of Object.values(CA_FILES))
      expect((await stat(path.join(caDir, f.key))).mode & 0o777).to.equal(0o600)
    const { stdout } = await run('openssl', [
      'x509',
      '-in',
      path.join(caDir, 'ca.crt'),
      '-noout',
      '-subject',
      '-ext',
      'basicConstraints',
    ])
    expect(stdout)
      .to.match(/CN ?= ?kubernetes/)
      .and.to.match(/CA:TRUE/)
    const cert = new X509Certificate(first.authorities.ca.certPem)
    expect(new Date(cert.validFrom).getTime()).to.equal(FIXED_NOW.getTime() - 5 * 60_000)
    expect(new Date(cert.validTo).getUTCFullYear()).to.equal(FIXED_NOW.getUTCFullYear() + 10)
    // sa.pub is the public half of sa.key
    const { stdout: derived } = await run('openssl', ['rsa', '-in', path.join(caDir, 'sa.key'), '-pubout'])
    expect(derived).to.equal(first.authorities.sa.certPem)

    const second = await loadOrCreateAuthorities(caDir, { generate: true, now: FIXED_NOW })
    expect(second.toWrite).to.deep.equal([])
    expect(second.authorities).to.deep.equal(first.authorities)
  })

  it('uses a given CA set as it is', async () => {
    const got = await loadOrCreateAuthorities(path.join(FIXTURES, 'pki'), { generate: true, now: FIXED_NOW })
    expect(got.toWrite).to.deep.equal([])
    expect(got.authorities.ca.keyPem).to.equal(await readFile(path.join(FIXTURES, 'pki/ca.key'), 'utf8'))
  })

  it('computes the discovery hash kubeadm computes (sha256 of the SPKI), cross-checked with openssl', async () => {
    const certFile = path.join(FIXTURES, 'pki/ca.crt')
    const spki = await run('sh', [
      '-c',
      'openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform der | sha256sum',
      'sh',
      certFile,
    ])
    expect(caCertHash(await readFile(certFile, 'utf8'))).to.equal(`sha256:${spki.stdout.split(' ')[0]}`)
  })

  const broken: Record<string, { setup: (dir: string) => Promise<void>; want: RegExp }> = {
    'a key that belongs to another CA': {
      setup: async (dir) =>
        writeFile(path.join(dir, 'ca.key'), await readFile(path.join(FIXTURES, 'pki/etcd/ca.key'))),
      want: /pki\/ca\.key does not belong to .*pki\/ca\.crt/,
    },
    'a certificate that is not PEM': {
      setup: (dir) => writeFile(path.join(dir, 'front-proxy-ca.crt'), 'garbage'),
      want: /front-proxy-ca\.crt is not a PEM certificate/,
    },
    'a key that is not PEM': {
      setup: (dir) => writeFile(path.join(dir, 'etcd/ca.key'), 'garbage'),
      want: /etcd\/ca\.key is not a PEM private key/,
    },
    'an sa.pub of another key': {
      setup: async (dir) => {
        const { stdout } = await run('openssl', ['rsa', '-in', path.join(FIXTURES, 'pki/ca.key'), '-pubout'])
        await writeFile(path.join(dir, 'sa.pub'), stdout)
      },
      want: /sa\.key does not belong to .*sa\.pub/,
    },
    'a broken pair while another is missing (nothing is generated)': {
      setup: async (dir) => {
        await rm(path.join(dir, 'ca.crt'))
        await rm(path.join(dir, 'ca.key'))
        await writeFile(path.join(dir, 'sa.key'), 'garbage')
      },
      want: /sa\.key is not a PEM private key/,
    },
    'a certificate without its key': {
      setup: (dir) => rm(path.join(dir, 'ca.key')),
      want: /ca\.crt exists but .*ca\.key does not/,
    },
  }
  for (const [name, tc] of Object.entries(broken)) {
    it(`refuses ${name}, and changes nothing on disk`, async () => {
      const caDir = path.join(ws.dir, 'pki')
      await run('cp', ['-r', path.join(FIXTURES, 'pki'), caDir])
      await tc.setup(caDir)
      const before = await snapshot(caDir)
      await expect(loadOrCreateAuthorities(caDir, { generate: true, now: FIXED_NOW })).to.be.rejectedWith(
        tc.want,
      )
      expect(await snapshot(caDir)).to.deep.equal(before)
    })
  }

  it("does not generate CAs for join data (they must be the cluster's)", async () => {
    const caDir = path.join(ws.dir, 'empty')
    await mkdir(caDir)
    await expect(loadOrCreateAuthorities(caDir, { generate: false, now: FIXED_NOW })).to.be.rejectedWith(
      /ca\.crt does not exist/,
    )
  })

  it('writes an admin kubeconfig whose client certificate the cluster CA signed (openssl verify)', async () => {
    const { authorities } = await loadOrCreateAuthorities(path.join(FIXTURES, 'pki'), {
      generate: false,
      now: FIXED_NOW,
    })
    const kubeconfig = parse(
      createAdminKubeconfig(authorities.ca, 'demo', 'https://10.0.0.1:6443', new Date()),
    ) as {
      users: Array<{ name: string; user: Record<string, string> }>
      'current-context': string
    }
    expect(kubeconfig['current-context']).to.equal('demo-admin@demo')
    const clientCert = Buffer.from(
      kubeconfig.users[0]?.user['client-certificate-data'] ?? '',
      'base64',
    ).toString()
    const file = path.join(ws.dir, 'client.crt')
    await writeFile(file, clientCert)
    const { stdout } = await run('openssl', ['verify', '-CAfile', path.join(FIXTURES, 'pki/ca.crt'), file])
    expect(stdout).to.contain(': OK')
    expect(new X509Certificate(clientCert).subject)
      .to.contain('O=system:masters')
      .and.to.contain('CN=kubernetes-admin')
  })
})

async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const f of ALL_FILES) out[f] = await readFile(path.join(dir, f), 'utf8').catch(() => '(absent)')
  return out
}
