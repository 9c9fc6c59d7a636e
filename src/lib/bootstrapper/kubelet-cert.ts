/** The kubelet's serving/client certificate, signed by the fresh cluster CA between kubeadm's certs and init phases. */
import { createPrivateKey, generateKeyPair, X509Certificate } from 'node:crypto'
import { promisify } from 'node:util'
import { AsnConvert } from '@peculiar/asn1-schema'
import {
  ExtendedKeyUsage,
  GeneralName,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  id_kp_clientAuth,
  id_kp_serverAuth,
  KeyUsage,
  KeyUsageFlags,
  SubjectAlternativeName,
} from '@peculiar/asn1-x509'
import {
  distinguishedName,
  parseCertificate,
  randomSerialNumber,
  signCertificate,
  toPem,
  type CertificateExtension,
} from '../atls/x509.js'

const BACKDATE_MS = 2 * 60 * 60 * 1000 // tolerates clock skew between nodes, as Constellation does
const VALIDITY_MS = 365 * 24 * 60 * 60 * 1000
const generateEcKeyPair = promisify(generateKeyPair)

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
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' })
  const subject = distinguishedName([
    ['CN', `system:node:${input.nodeName}`],
    ['O', 'system:nodes'],
  ])
  const extensions = kubeletExtensions(input)
  return {
    sign(caCertPem: string, caKeyPem: string): { certPem: string; keyPem: string } {
      // the issuer field repeats the CA's subject exactly as encoded, so every verifier chains it
      const ca = parseCertificate(new X509Certificate(caCertPem).raw)
      const der = signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject,
          issuer: ca.tbsCertificate.subject,
          notBefore: new Date(input.now.getTime() - BACKDATE_MS),
          notAfter: new Date(input.now.getTime() + VALIDITY_MS),
          publicKey,
          extensions,
        },
        createPrivateKey(caKeyPem),
      )
      const keyPem = privateKey.export({ type: 'sec1', format: 'pem' }).toString()
      return { certPem: toPem(der), keyPem }
    },
  }
}

function kubeletExtensions(input: KubeletCertRequest): CertificateExtension[] {
  const der = (value: object) => new Uint8Array(AsnConvert.serialize(value))
  return [
    {
      oid: id_ce_keyUsage,
      critical: true,
      value: der(new KeyUsage(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyEncipherment)),
    },
    {
      oid: id_ce_extKeyUsage,
      critical: false,
      value: der(new ExtendedKeyUsage([id_kp_clientAuth, id_kp_serverAuth])),
    },
    {
      oid: id_ce_subjectAltName,
      critical: false,
      value: der(
        new SubjectAlternativeName([
          new GeneralName({ dNSName: input.nodeName }),
          ...input.ips.map((ip) => new GeneralName({ iPAddress: ip })),
        ]),
      ),
    },
  ]
}
