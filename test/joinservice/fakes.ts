/**
 * Doubles for the join service's dependencies, named for their role. The CSR parser is a fake so
 * that a test states the parsed fields directly: its "DER" is JSON. x509's parseCsr, the production
 * parser, has its own tests (test/x509/csr.test.ts). Keys, the CA, signing and HKDF are real.
 */
import { X509Certificate } from 'node:crypto'
import type { Component } from '../../src/gen/components.js'
import { ClusterKms } from '../../src/lib/kms/index.js'
import {
  caBasicConstraints,
  distinguishedName,
  generateEcdsaP256KeyPair,
  keyUsage,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../../src/lib/x509/index.js'
import { caCertHash, type ClusterCa } from '../../src/lib/joinservice/cluster-ca.js'
import type { CsrFields, CsrParser } from '../../src/lib/joinservice/csr-policy.js'
import type { TokenIssuer } from '../../src/lib/kube/index.js'
import type { DataKeysGetter } from '../../src/lib/joinservice/ticket.js'

export const MASTER = { key: Buffer.alloc(32, 0x11), salt: Buffer.alloc(32, 0x22) }
export const MEASUREMENT_SALT = Buffer.alloc(32, 0x33)
/** What a join service sends a control plane beside the PKI (paths.ts CONTROL_PLANE_SERVICE_FILES). */
export const SERVICE_FILES = [
  { name: 'constellation/mastersecret', data: MASTER.key },
  { name: 'constellation/salt', data: MASTER.salt },
  { name: 'constellation/join-config.json', data: Buffer.from('{"measurements":{}}\n') },
]
export const serviceFiles = () => Promise.resolve(SERVICE_FILES)
export const COMPONENTS: Component[] = [
  {
    url: 'https://example.invalid/kubelet',
    hash: 'sha256:00',
    installPath: '/run/state/bin/kubelet',
    extract: false,
  },
]

/** The cluster KMS itself: cheap and real, so keys in tickets are the keys the node will derive. */
export const realDataKeys = (): DataKeysGetter => {
  const kms = new ClusterKms(MASTER.key, MASTER.salt)
  return (keys) => Promise.all(keys.map(async (k) => kms.deriveDataKey(k.id, k.length)))
}

/** A key service that is down: every call fails as the real client does when nothing listens. */
export const stubDataKeysDown: DataKeysGetter = () =>
  Promise.reject(new Error('key service at 127.0.0.1:9000 is unreachable: connect ECONNREFUSED'))

/** Hands out distinct, well-formed tokens and remembers them. */
export class FakeTokenIssuer implements TokenIssuer {
  readonly issued: string[] = []
  /** Whom each token was issued to. */
  readonly issuedFor: Array<string | undefined> = []
  failWith?: Error
  async issue(node?: string): Promise<string> {
    if (this.failWith) throw this.failWith
    this.issuedFor.push(node)
    const token = `tok${String(this.issued.length).padStart(3, '0')}.${'s'.repeat(12)}${String(this.issued.length).padStart(4, '0')}`
    this.issued.push(token)
    return token
  }
}

/** A CSR stand-in: JSON of the fields (public key as base64) that fakeCsrParser reads back. */
export function encodeFakeCsr(fields: CsrFields): Buffer {
  return Buffer.from(JSON.stringify({ ...fields, publicKeyDer: fields.publicKeyDer.toString('base64') }))
}

export const fakeCsrParser: CsrParser = (der) => {
  let raw: CsrFields & { publicKeyDer: string }
  try {
    raw = JSON.parse(der.toString('utf8')) as typeof raw
  } catch {
    throw new Error('fake CSR parser: not a fake CSR')
  }
  return { ...raw, publicKeyDer: Buffer.from(raw.publicKeyDer, 'base64') }
}

/** An honest node's request: a fresh P-256 key, its name, its address. */
export async function nodeCsr(
  name: string,
  ip: string,
  overrides: Partial<CsrFields> = {},
): Promise<CsrFields> {
  const { publicKey } = await generateEcdsaP256KeyPair()
  return {
    organizations: ['system:nodes'],
    commonNames: [`system:node:${name}`],
    key: { type: 'ec', namedCurve: 'prime256v1' },
    publicKeyDer: publicKey.export({ type: 'spki', format: 'der' }),
    dnsNames: [name],
    ipAddresses: [ip],
    signatureValid: true,
    ...overrides,
  }
}

/** A cluster CA (P-256) and its PKI files; the non-CA files are recognizable stand-ins. */
export async function makeClusterCa(): Promise<ClusterCa> {
  const keys = await generateEcdsaP256KeyPair()
  const name = distinguishedName([['CN', 'kubernetes']])
  const caCertPem = toPem(
    signCertificate(
      {
        serialNumber: randomSerialNumber(),
        subject: name,
        issuer: name,
        notBefore: new Date(Date.now() - 3600_000),
        notAfter: new Date(Date.now() + 365 * 86400_000),
        publicKey: keys.publicKey,
        extensions: [caBasicConstraints(), keyUsage(['keyCertSign', 'digitalSignature'])],
      },
      keys.privateKey,
    ),
  )
  const caKeyPem = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const file = (n: string) => ({ name: n, data: Buffer.from(`fake ${n}`) })
  return {
    caCertPem,
    caKeyPem,
    caCertHash: caCertHash(caCertPem),
    controlPlaneFiles: [
      { name: 'ca.crt', data: Buffer.from(caCertPem) },
      { name: 'ca.key', data: Buffer.from(caKeyPem) },
      ...['sa.key', 'sa.pub', 'front-proxy-ca.crt', 'front-proxy-ca.key', 'etcd/ca.crt', 'etcd/ca.key'].map(
        file,
      ),
    ],
  }
}

export const certOf = (pem: Buffer) => new X509Certificate(pem)
