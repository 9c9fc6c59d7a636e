/** The admin kubeconfig of capi.md §5.5: a client certificate for system:masters signed by the cluster CA. */
import { createPrivateKey } from 'node:crypto'
import {
  distinguishedName,
  extendedKeyUsage,
  generateRsaKeyPair,
  keyUsage,
  parseCertificate,
  randomSerialNumber,
  signCertificate,
  toPem,
} from '../x509/index.js'
import { stringifyYaml } from '../yaml/index.js'
import type { KeyPair } from './types.js'

const CLIENT_CERT_VALIDITY_YEARS = 1

export function createAdminKubeconfig(ca: KeyPair, clusterName: string, server: string, now: Date): string {
  const { privateKey, publicKey } = generateRsaKeyPair()
  const caCert = parseCertificate(ca.certPem).tbsCertificate
  const notAfter = new Date(now.getTime())
  notAfter.setUTCFullYear(now.getUTCFullYear() + CLIENT_CERT_VALIDITY_YEARS)
  const der = signCertificate(
    {
      serialNumber: randomSerialNumber(),
      subject: distinguishedName([
        ['CN', 'kubernetes-admin'],
        ['O', 'system:masters'],
      ]),
      issuer: caCert.subject, // exactly as the CA encodes it, so every verifier chains it
      notBefore: caCert.validity.notBefore.getTime(),
      notAfter,
      publicKey,
      extensions: [keyUsage(['digitalSignature', 'keyEncipherment']), extendedKeyUsage(['clientAuth'])],
    },
    createPrivateKey(ca.keyPem),
  )
  const b64 = (s: string) => Buffer.from(s).toString('base64')
  const user = `${clusterName}-admin`
  const context = `${user}@${clusterName}`
  return stringifyYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: clusterName, cluster: { server, 'certificate-authority-data': b64(ca.certPem) } }],
    users: [
      {
        name: user,
        user: {
          'client-certificate-data': b64(toPem(der)),
          'client-key-data': b64(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
        },
      },
    ],
    contexts: [{ name: context, context: { cluster: clusterName, user } }],
    'current-context': context,
  })
}
