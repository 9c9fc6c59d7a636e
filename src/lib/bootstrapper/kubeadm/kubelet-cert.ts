/** The kubelet's serving/client certificate, signed by the fresh cluster CA between kubeadm's certs and init phases. */
import { createPrivateKey } from 'node:crypto'
import {
  distinguishedName,
  extendedKeyUsage,
  generateEcdsaP256KeyPair,
  keyUsage,
  pemOfSigned,
  randomSerialNumber,
  signCertificate,
  subjectOf,
  subjectAltName,
} from '../../x509/index.js'

const BACKDATE_MS = 2 * 60 * 60 * 1000 // tolerates clock skew between nodes, as Constellation does
const VALIDITY_MS = 365 * 24 * 60 * 60 * 1000

export interface KubeletCertInput {
  caCertPem: string
  caKeyPem: string
  nodeName: string
  ips: readonly string[]
  now: Date
}

export type KubeletCertRequest = Omit<KubeletCertInput, 'caCertPem' | 'caKeyPem'>

/** An ECDSA P-256 key and a certificate for it from the cluster CA (RSA or ECDSA P-256 CA key). */
export async function issueKubeletCert(
  input: KubeletCertInput,
): Promise<{ certPem: string; keyPem: string }> {
  return (await prepareKubeletCert(input)).sign(input.caCertPem, input.caKeyPem)
}

/**
 * Everything but the CA's signature: the key and the extensions. The bootstrapper prepares this
 * while kubeadm creates the CA, and signs once the CA exists.
 */
export async function prepareKubeletCert(input: KubeletCertRequest) {
  const { publicKey, privateKey } = await generateEcdsaP256KeyPair()
  const subject = distinguishedName([
    ['CN', `system:node:${input.nodeName}`],
    ['O', 'system:nodes'],
  ])
  const extensions = [
    keyUsage(['digitalSignature', 'keyEncipherment']),
    extendedKeyUsage(['clientAuth', 'serverAuth']),
    subjectAltName({ dns: [input.nodeName], ips: input.ips }),
  ]
  return {
    sign(caCertPem: string, caKeyPem: string): { certPem: string; keyPem: string } {
      const der = signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject,
          // the CA's subject exactly as encoded, so every verifier chains it (kubeadm's phases
          // wait for this: the view reads it at a third of asn1-schema's full parse)
          issuer: subjectOf(caCertPem),
          notBefore: new Date(input.now.getTime() - BACKDATE_MS),
          notAfter: new Date(input.now.getTime() + VALIDITY_MS),
          publicKey,
          extensions,
        },
        createPrivateKey(caKeyPem),
      )
      const keyPem = privateKey.export({ type: 'sec1', format: 'pem' }).toString()
      return { certPem: pemOfSigned(der), keyPem }
    },
  }
}
