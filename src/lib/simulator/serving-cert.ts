/**
 * The serving certificate of the FakeApiServer CONTRACT FAKE: self-signed, so that it is its own
 * trust anchor (its kubeconfig carries it as the CA), naming localhost, 127.0.0.1 and the hosts
 * asked for. One per set of names and process: RSA key generation is slow, and tests start many.
 */
import { isIP } from 'node:net'
import {
  caBasicConstraints,
  distinguishedName,
  generateRsaKeyPair,
  randomSerialNumber,
  signCertificate,
  subjectAltName,
  toPem,
} from '../x509/index.js'

export interface ServingCert {
  certPem: string
  keyPem: string
}

const cache = new Map<string, ServingCert>()

/** A certificate for localhost, 127.0.0.1 and `hosts` (IP addresses or DNS names). */
export function servingCert(hosts: readonly string[] = []): ServingCert {
  const ips = [...new Set(['127.0.0.1', ...hosts.filter((h) => isIP(h) !== 0)])].sort()
  const dns = [...new Set(['localhost', ...hosts.filter((h) => isIP(h) === 0)])].sort()
  const key = `${ips.join(',')}|${dns.join(',')}`
  const cached = cache.get(key)
  if (cached) return cached
  const { privateKey, publicKey } = generateRsaKeyPair()
  const name = distinguishedName([['CN', 'fake-apiserver (contract fake)']])
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: name,
      issuer: name,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 365 * 24 * 3600_000), // a mini cluster may run for long
      publicKey,
      extensions: [caBasicConstraints(), subjectAltName({ dns, ips })],
    },
    privateKey,
  )
  const cert = { certPem: toPem(der), keyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() }
  cache.set(key, cert)
  return cert
}
