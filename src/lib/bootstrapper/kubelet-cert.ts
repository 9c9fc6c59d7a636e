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

/** An ECDSA P-256 key and a certificate for it from the cluster CA (RSA or ECDSA P-256 CA key). */
export async function issueKubeletCert(
  input: KubeletCertInput,
): Promise<{ certPem: string; keyPem: string }> {
  const { publicKey, privateKey } = await generateEcKeyPair('ec', { namedCurve: 'P-256' })
  // the issuer field repeats the CA's subject exactly as encoded, so every verifier chains it
  const ca = parseCertificate(new X509Certificate(input.caCertPem).raw)
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: distinguishedName([
        ['CN', `system:node:${input.nodeName}`],
        ['O', 'system:nodes'],
      ]),
      issuer: ca.tbsCertificate.subject,
      notBefore: new Date(input.now.getTime() - BACKDATE_MS),
      notAfter: new Date(input.now.getTime() + VALIDITY_MS),
      publicKey,
      extensions: kubeletExtensions(input),
    },
    createPrivateKey(input.caKeyPem),
  )
  const keyPem = privateKey.export({ type: 'sec1', format: 'pem' }).toString()
  return { certPem: toPem(der), keyPem }
}

function kubeletExtensions(input: KubeletCertInput): CertificateExtension[] {
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
