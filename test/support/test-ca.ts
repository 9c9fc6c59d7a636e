/** Certificates made on the spot for chain tests: CAs, intermediates and leaves over any public key. */
import { generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto'
import {
  caBasicConstraints,
  distinguishedName,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../src/lib/x509/index.js'

export interface TestCertificate {
  der: Buffer
  pem: string
  cert: X509Certificate
  cn: string
  privateKey: KeyObject
}

export interface TestCertificateOptions {
  cn: string
  /** basicConstraints CA:TRUE */
  ca: boolean
  /** Self-signed when absent. */
  issuer?: TestCertificate
  /** The subject's key (e.g. a TPM's EK); a fresh P-256 key when absent (then privateKey signs). */
  publicKey?: KeyObject
  notBefore?: Date
  notAfter?: Date
}

const HOUR_MS = 3600_000

export function testCertificate(opts: TestCertificateOptions): TestCertificate {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const subject = distinguishedName([['CN', opts.cn]])
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject,
      issuer: opts.issuer ? distinguishedName([['CN', opts.issuer.cn]]) : subject,
      notBefore: opts.notBefore ?? new Date(Date.now() - HOUR_MS),
      notAfter: opts.notAfter ?? new Date(Date.now() + 24 * HOUR_MS),
      publicKey: opts.publicKey ?? pair.publicKey,
      extensions: opts.ca ? [caBasicConstraints()] : [],
    },
    opts.issuer?.privateKey ?? pair.privateKey,
  )
  return { der, pem: toPem(der), cert: new X509Certificate(der), cn: opts.cn, privateKey: pair.privateKey }
}
