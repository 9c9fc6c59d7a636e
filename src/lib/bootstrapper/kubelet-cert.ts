/** The kubelet's serving/client certificate, signed by the fresh cluster CA between kubeadm's certs and init phases. */
import 'reflect-metadata'
import { createPrivateKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto'
import * as x509 from '@peculiar/x509'

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])

const BACKDATE_MS = 2 * 60 * 60 * 1000 // tolerates clock skew between nodes, as Constellation does
const VALIDITY_MS = 365 * 24 * 60 * 60 * 1000
const KUBELET_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const

export interface KubeletCertInput {
  caCertPem: string
  caKeyPem: string
  nodeName: string
  ips: readonly string[]
  now: Date
}

export async function issueKubeletCert(
  input: KubeletCertInput,
): Promise<{ certPem: string; keyPem: string }> {
  const subtle = webcrypto.subtle
  const keys = await subtle.generateKey(KUBELET_KEY, true, ['sign', 'verify'])
  const caKeyObject = createPrivateKey(input.caKeyPem)
  const signing = signingAlgorithm(caKeyObject)
  const caKey = await subtle.importKey(
    'pkcs8',
    caKeyObject.export({ type: 'pkcs8', format: 'der' }),
    signing,
    false,
    ['sign'],
  )
  const ca = new x509.X509Certificate(input.caCertPem)
  const serial = randomBytes(16)
  serial[0] = (serial[0] ?? 0) & 0x7f // positive, below 2^127
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject: `CN=system:node:${input.nodeName}, O=system:nodes`,
    issuer: ca.subject,
    notBefore: new Date(input.now.getTime() - BACKDATE_MS),
    notAfter: new Date(input.now.getTime() + VALIDITY_MS),
    signingAlgorithm: signing,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.clientAuth,
        x509.ExtendedKeyUsage.serverAuth,
      ]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'dns', value: input.nodeName },
        ...input.ips.map((ip) => ({ type: 'ip' as const, value: ip })),
      ]),
    ],
  })
  const pkcs8 = Buffer.from(await subtle.exportKey('pkcs8', keys.privateKey))
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({
    type: 'sec1',
    format: 'pem',
  })
  return { certPem: cert.toString('pem'), keyPem: keyPem.toString() }
}

type SigningAlgorithm =
  { name: 'RSASSA-PKCS1-v1_5'; hash: 'SHA-256' } | { name: 'ECDSA'; namedCurve: 'P-256'; hash: 'SHA-256' }

function signingAlgorithm(key: KeyObject): SigningAlgorithm {
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
  if (key.asymmetricKeyType === 'ec') return { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }
  throw new Error(`cluster CA key type ${key.asymmetricKeyType ?? 'unknown'} is not supported`)
}
