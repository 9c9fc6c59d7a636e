/** Signs a joining node's kubelet certificate with the cluster CA, from a request the CSR policy accepted. */
import { createPrivateKey } from 'node:crypto'
import {
  distinguishedName,
  extendedKeyUsage,
  keyUsage,
  randomSerialNumber,
  signCertificate,
  subjectAltName,
  subjectOf,
} from '../x509/index.js'
import { claimedNodeName, NODES_GROUP, NODE_NAME_PREFIX, type CsrFields } from './csr-policy.js'
import { ipBytes } from './ip-address.js'

/** Tolerates clock skew between nodes, as Constellation backdates. */
export const KUBELET_CERT_BACKDATE_MS = 2 * 60 * 60 * 1000
export const KUBELET_CERT_VALIDITY_MS = 365 * 24 * 60 * 60 * 1000

export interface KubeletSigner {
  /** The certificate's DER, for fields csrProblems found nothing wrong with. */
  sign(csr: CsrFields): Promise<Buffer>
}

export interface KubeletSignerOptions {
  caCertPem: string
  caKeyPem: string
  clock: () => Date
}

/**
 * The same profile as the init node's own kubelet certificate (bootstrapper/kubelet-cert.ts):
 * client and serving use, the node name as DNS SAN, its address as IP SAN.
 */
export function createKubeletSigner({ caCertPem, caKeyPem, clock }: KubeletSignerOptions): KubeletSigner {
  // the CA's subject exactly as encoded, so every verifier chains it; encoded once, as are the
  // extensions every kubelet certificate shares
  const issuer = subjectOf(caCertPem)
  const caKey = createPrivateKey(caKeyPem)
  const usages = [
    keyUsage(['digitalSignature', 'keyEncipherment']),
    extendedKeyUsage(['clientAuth', 'serverAuth']),
  ]
  return {
    async sign(csr) {
      const name = claimedNodeName(csr)
      if (name === undefined)
        throw new Error('kubelet request has no node name; check it with csrProblems first')
      const now = clock().getTime()
      return signCertificate(
        {
          serialNumber: randomSerialNumber(),
          subject: distinguishedName([
            ['CN', NODE_NAME_PREFIX + name],
            ['O', NODES_GROUP],
          ]),
          issuer,
          notBefore: new Date(now - KUBELET_CERT_BACKDATE_MS),
          notAfter: new Date(now + KUBELET_CERT_VALIDITY_MS),
          // the SPKI parseCsr exported from the key it verified the request with; a KeyObject
          // made from it again would only be exported back (two OpenSSL codec passes per join)
          publicKey: csr.publicKeyDer,
          extensions: [
            ...usages,
            subjectAltName({ dns: csr.dnsNames, ips: csr.ipAddresses.map(canonicalIp) }),
          ],
        },
        caKey,
      )
    },
  }
}

/** An IPv4 node's address as IPv4, even when the request wrote it IPv4-mapped. */
function canonicalIp(text: string): string {
  const bytes = ipBytes(text)
  return bytes?.length === 4 ? bytes.join('.') : text
}
