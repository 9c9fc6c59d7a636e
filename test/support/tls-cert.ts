/** A self-signed server certificate for 127.0.0.1 (test servers that speak HTTPS); one per process. */
import forge from 'node-forge'

let cached: { certPem: string; keyPem: string } | undefined

export function localhostCert(): { certPem: string; keyPem: string } {
  if (cached) return cached
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048 })
  const cert = forge.pki.createCertificate()
  cert.publicKey = keys.publicKey
  cert.serialNumber = '01'
  cert.validity.notBefore = new Date(Date.now() - 60_000)
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000)
  const subject = [{ name: 'commonName', value: 'test-localhost' }]
  cert.setSubject(subject)
  cert.setIssuer(subject)
  cert.setExtensions([
    { name: 'basicConstraints', cA: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 7, ip: '127.0.0.1' },
        { type: 2, value: 'localhost' },
      ],
    },
  ])
  cert.sign(keys.privateKey, forge.md.sha256.create())
  cached = { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) }
  return cached
}
