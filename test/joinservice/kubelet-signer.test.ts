import { X509Certificate, type KeyObject, type KeyPairKeyObjectResult } from 'node:crypto'
import { expect } from '../support/chai.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP256KeyPair,
  generateRsaKeyPair,
  keyUsage,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../src/lib/x509/index.js'
import {
  createKubeletSigner,
  KUBELET_CERT_BACKDATE_MS,
  KUBELET_CERT_VALIDITY_MS,
} from '../../src/lib/joinservice/kubelet-signer.js'
import type { CsrFields } from '../../src/lib/joinservice/csr-policy.js'

const NOW = new Date('2026-03-01T12:00:00.000Z')

function selfSignedCa(keys: KeyPairKeyObjectResult): string {
  const name = distinguishedName([['CN', 'kubernetes']])
  return toPem(
    signCertificate(
      {
        serialNumber: randomSerialNumber(),
        subject: name,
        issuer: name,
        notBefore: new Date(NOW.getTime() - 3600_000),
        notAfter: new Date(NOW.getTime() + 10 * 365 * 86400_000),
        publicKey: keys.publicKey,
        extensions: [caBasicConstraints(), keyUsage(['keyCertSign', 'digitalSignature'])],
      },
      keys.privateKey,
    ),
  )
}

const csrFor = (publicKey: KeyObject, ips = ['10.0.0.5']): CsrFields => ({
  organizations: ['system:nodes'],
  commonNames: ['system:node:worker-1'],
  key: { type: 'ec', namedCurve: 'prime256v1' },
  publicKeyDer: publicKey.export({ type: 'spki', format: 'der' }),
  dnsNames: ['worker-1'],
  ipAddresses: ips,
  signatureValid: true,
})

describe('kubelet signer', () => {
  const cas: Record<string, () => Promise<KeyPairKeyObjectResult> | KeyPairKeyObjectResult> = {
    'an RSA CA (as kubeadm makes it)': generateRsaKeyPair,
    'an ECDSA P-256 CA': generateEcdsaP256KeyPair,
  }
  for (const [name, makeCa] of Object.entries(cas))
    it(`signs the node's own key, names and address with ${name}`, async () => {
      const ca = await makeCa()
      const caCertPem = selfSignedCa(ca)
      const node = await generateEcdsaP256KeyPair()
      const signer = createKubeletSigner({
        caCertPem,
        caKeyPem: ca.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        clock: () => NOW,
      })
      const cert = new X509Certificate(await signer.sign(csrFor(node.publicKey)))
      expect(cert.verify(ca.publicKey), 'signed by the CA').to.be.true
      expect(cert.checkIssued(new X509Certificate(caCertPem))).to.be.true
      expect(cert.publicKey.export({ type: 'spki', format: 'der' })).to.deep.equal(
        node.publicKey.export({ type: 'spki', format: 'der' }),
      )
      expect(cert.subject.split('\n').sort()).to.deep.equal(['CN=system:node:worker-1', 'O=system:nodes'])
      expect(cert.subjectAltName).to.equal('DNS:worker-1, IP Address:10.0.0.5')
      expect(cert.ca).to.be.false
      expect(new Date(cert.validFrom).getTime()).to.equal(NOW.getTime() - KUBELET_CERT_BACKDATE_MS)
      expect(new Date(cert.validTo).getTime()).to.equal(NOW.getTime() + KUBELET_CERT_VALIDITY_MS)
      expect(cert.keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.2', '1.3.6.1.5.5.7.3.1'])
    })

  it('writes an IPv4-mapped request address as IPv4', async () => {
    const ca = await generateEcdsaP256KeyPair()
    const node = await generateEcdsaP256KeyPair()
    const signer = createKubeletSigner({
      caCertPem: selfSignedCa(ca),
      caKeyPem: ca.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      clock: () => NOW,
    })
    const cert = new X509Certificate(await signer.sign(csrFor(node.publicKey, ['::ffff:10.0.0.5'])))
    expect(cert.subjectAltName).to.equal('DNS:worker-1, IP Address:10.0.0.5')
  })
})
