/** The admin kubeconfig of capi.md §5.5: a client certificate for system:masters signed by the cluster CA. */
import { generateKeyPairSync } from 'node:crypto'
import forge from 'node-forge'
import { stringifyYaml } from '../yaml/index.js'
import { serialNumber } from './certs.js'
import type { KeyPair } from './types.js'

const CLIENT_CERT_VALIDITY_YEARS = 1

export function createAdminKubeconfig(ca: KeyPair, clusterName: string, server: string, now: Date): string {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const caCert = forge.pki.certificateFromPem(ca.certPem)
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString())
  cert.serialNumber = serialNumber()
  cert.validity.notBefore = caCert.validity.notBefore
  cert.validity.notAfter = new Date(now.getTime())
  cert.validity.notAfter.setUTCFullYear(now.getUTCFullYear() + CLIENT_CERT_VALIDITY_YEARS)
  cert.setSubject([
    { name: 'commonName', value: 'kubernetes-admin' },
    { name: 'organizationName', value: 'system:masters' },
  ])
  cert.setIssuer(caCert.subject.attributes)
  cert.setExtensions([
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ])
  cert.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create())
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
          'client-certificate-data': b64(forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n')),
          'client-key-data': b64(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
        },
      },
    ],
    contexts: [{ name: context, context: { cluster: clusterName, user } }],
    'current-context': context,
  })
}
