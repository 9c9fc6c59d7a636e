/** The cluster CA as the join service hands it out: the discovery pin for every node, the kubeadm PKI for control planes. */
import { createHash, X509Certificate } from 'node:crypto'
import path from 'node:path'
import { readRegularFile } from '../system/index.js'

/** kubeadm's shared PKI under /etc/kubernetes/pki that a joining control plane needs (Constellation's list). */
export const CONTROL_PLANE_PKI_FILES = [
  'ca.crt',
  'ca.key',
  'sa.key',
  'sa.pub',
  'front-proxy-ca.crt',
  'front-proxy-ca.key',
  'etcd/ca.crt',
  'etcd/ca.key',
] as const
/** Certificates and keys are a few KiB; anything far larger is not one. */
const MAX_PKI_FILE_BYTES = 64 * 1024

export interface ControlPlaneFile {
  /** Relative to /etc/kubernetes/pki, as control_plane_files carries it. */
  name: string
  data: Buffer
}

/**
 * kubeadm's `--discovery-token-ca-cert-hash`: `sha256:` and the hex SHA-256 of the CA certificate's
 * DER SubjectPublicKeyInfo. Pinning the key, not the certificate, survives a CA re-issue with the same key.
 */
export function caCertHash(caCert: string | Buffer): string {
  const spki = new X509Certificate(caCert).publicKey.export({ type: 'spki', format: 'der' })
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`
}

export interface ClusterCa {
  caCertPem: string
  /** Signs kubelet certificates; never leaves the node except in a control plane's ticket. */
  caKeyPem: string
  caCertHash: string
  controlPlaneFiles: readonly ControlPlaneFile[]
}

/** Reads the PKI kubeadm wrote on this control plane (`pkiDir` = nodePaths(root).kubernetesPki). */
export async function loadClusterCa(pkiDir: string): Promise<ClusterCa> {
  const read = await Promise.allSettled(
    CONTROL_PLANE_PKI_FILES.map((name) =>
      readRegularFile(path.join(pkiDir, name), {
        maxBytes: MAX_PKI_FILE_BYTES,
        what: 'cluster PKI file',
        missingHint: 'the join service runs on a control plane after kubeadm created its PKI',
      }),
    ),
  )
  // the first problem in the list's order, whichever read finished first
  const failed = read.find((r) => r.status === 'rejected')
  if (failed) throw failed.reason
  const controlPlaneFiles = CONTROL_PLANE_PKI_FILES.map((name, i) => ({
    name,
    data: (read[i] as PromiseFulfilledResult<Buffer>).value,
  }))
  const file = (name: string) => controlPlaneFiles.find((f) => f.name === name)?.data.toString('utf8') ?? ''
  const caCertPem = file('ca.crt')
  let hash: string
  try {
    hash = caCertHash(caCertPem)
  } catch (cause) {
    throw new Error(`${path.join(pkiDir, 'ca.crt')} is not a PEM certificate`, { cause })
  }
  return { caCertPem, caKeyPem: file('ca.key'), caCertHash: hash, controlPlaneFiles }
}
