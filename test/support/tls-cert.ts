/** A self-signed server certificate for 127.0.0.1 (test servers that speak HTTPS); one per process. */
import {
  caBasicConstraints,
  distinguishedName,
  generateRsaKeyPair,
  randomSerialNumber,
  signCertificate,
  subjectAltName,
  toPem,
} from '../../src/lib/x509/index.js'

let cached: { certPem: string; keyPem: string } | undefined

export function localhostCert(): { certPem: string; keyPem: string } {
  if (cached) return cached
  const { privateKey, publicKey } = generateRsaKeyPair()
  const name = distinguishedName([['CN', 'test-localhost']])
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 24 * 3600_000),
      publicKey,
      // its own trust anchor: clients pass it as their CA
      extensions: [caBasicConstraints(), subjectAltName({ dns: ['localhost'], ips: ['127.0.0.1'] })],
    },
    privateKey,
  )
  cached = { certPem: toPem(der), keyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() }
  return cached
}
