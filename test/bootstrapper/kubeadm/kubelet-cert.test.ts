import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../../support/chai.js'
import { withTempDir } from '../../support/temp.js'
import { issueKubeletCert } from '../../../src/lib/bootstrapper/kubeadm/kubelet-cert.js'
import { runProcess } from '../../../src/lib/system/process.js'

async function openssl(args: string[], input?: Buffer): Promise<string> {
  const res = await runProcess('openssl', args, { input })
  if (res.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${res.stdout}${res.stderr}`)
  return res.stdout
}

/** A cluster CA made by openssl, as kubeadm would have written ca.crt/ca.key. */
async function opensslCa(dir: string, keyArgs: string[]): Promise<{ cert: string; key: string }> {
  const key = path.join(dir, 'ca.key')
  const cert = path.join(dir, 'ca.crt')
  await openssl(['genpkey', ...keyArgs, '-out', key])
  await openssl(['req', '-x509', '-new', '-key', key, '-subj', '/CN=kubernetes', '-days', '1', '-out', cert])
  return { cert, key }
}

const CAS = [
  {
    name: 'RSA',
    keyArgs: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
    sig: 'sha256WithRSAEncryption',
  },
  {
    name: 'ECDSA P-256',
    keyArgs: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
    sig: 'ecdsa-with-SHA256',
  },
]

describe('kubelet certificate', () => {
  for (const tc of CAS)
    it(`is signed by a ${tc.name} cluster CA and openssl verifies the chain and reads every field`, async () => {
      await withTempDir(async (dir) => {
        const ca = await opensslCa(dir, tc.keyArgs)
        const issued = await issueKubeletCert({
          caCertPem: await readFile(ca.cert, 'utf8'),
          caKeyPem: await readFile(ca.key, 'utf8'),
          nodeName: 'cp-0',
          ips: ['10.0.0.2', 'fd00::2'],
          now: new Date(),
        })
        const file = path.join(dir, 'kubelet.crt')
        await writeFile(file, issued.certPem)
        expect((await openssl(['verify', '-CAfile', ca.cert, file])).trim()).to.equal(`${file}: OK`)
        const text = await openssl(['x509', '-noout', '-text', '-in', file])
        expect(text).to.match(/Issuer: CN ?= ?kubernetes/)
        expect(text).to.match(/Subject: CN ?= ?system:node:cp-0, O ?= ?system:nodes/)
        expect(text).to.include(`Signature Algorithm: ${tc.sig}`)
        expect(text).to.match(/X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment/)
        expect(text).to.match(
          /Extended Key Usage:\s+TLS Web Client Authentication, TLS Web Server Authentication/,
        )
        expect(text).to.match(
          /Subject Alternative Name:\s+DNS:cp-0, IP Address:10.0.0.2, IP Address:FD00:0:0:0:0:0:0:2/,
        )
        const cert = new X509Certificate(issued.certPem)
        expect(cert.checkIssued(new X509Certificate(await readFile(ca.cert)))).to.be.true
        expect(cert.checkPrivateKey(createPrivateKey(issued.keyPem))).to.be.true
        expect(issued.keyPem).to.match(/^-----BEGIN EC PRIVATE KEY-----/)
      })
    })

  it('refuses a CA key it cannot sign with, naming the key type', async () => {
    await withTempDir(async (dir) => {
      const ca = await opensslCa(dir, ['-algorithm', 'ED25519'])
      await expect(
        issueKubeletCert({
          caCertPem: await readFile(ca.cert, 'utf8'),
          caKeyPem: await readFile(ca.key, 'utf8'),
          nodeName: 'cp-0',
          ips: [],
          now: new Date(),
        }),
      ).to.be.rejectedWith(/signing key type ed25519 is not supported/)
    })
  })
})
