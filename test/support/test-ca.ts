/** Certificates made on the spot for chain tests: CAs, intermediates and leaves over any public key. */
import { generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto'
import {
  caBasicConstraints,
  distinguishedName,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../src/lib/x509/index.js'
import type { NameAttribute } from '../../src/lib/x509/name.js'

export interface TestCertificate {
  der: Buffer
  pem: string
  cert: X509Certificate
  cn: string
  organization?: string
  privateKey: KeyObject
}

export interface TestCertificateOptions {
  /** The subject's CN; '' for an empty subject (as the TCG profile leaves an EK certificate's). */
  cn: string
  /** An O before the CN: a subject of two parts, as manufacturers' CAs have. */
  organization?: string
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

const nameOf = ({ cn, organization }: { cn: string; organization?: string }) =>
  distinguishedName([
    ...(organization ? [['O', organization] as NameAttribute] : []),
    ...(cn ? [['CN', cn] as NameAttribute] : []),
  ])

export function testCertificate(opts: TestCertificateOptions): TestCertificate {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const subject = nameOf(opts)
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject,
      issuer: opts.issuer ? nameOf(opts.issuer) : subject,
      notBefore: opts.notBefore ?? new Date(Date.now() - HOUR_MS),
      notAfter: opts.notAfter ?? new Date(Date.now() + 24 * HOUR_MS),
      publicKey: opts.publicKey ?? pair.publicKey,
      extensions: opts.ca ? [caBasicConstraints()] : [],
    },
    opts.issuer?.privateKey ?? pair.privateKey,
  )
  return {
    der,
    pem: toPem(der),
    cert: new X509Certificate(der),
    cn: opts.cn,
    organization: opts.organization,
    privateKey: pair.privateKey,
  }
}
