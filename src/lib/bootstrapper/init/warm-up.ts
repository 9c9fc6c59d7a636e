/**
 * What the first Init runs for the first time is slow: V8 runs it in the interpreter until it is hot
 * (and compiles it first, where the code cache was not trained yet, see bin/run.js). The parts that
 * cost most are pure, so the daemon runs them once with throwaway input while it waits for its
 * operator: the certificate encoder (the aTLS certificate of the first handshake) and decoder (the
 * kubelet's certificate names the CA's subject), bcrypt (the init secret's check) and the YAML
 * writer (kubeadm's files). By the init bench, Init request → kubeadm 35 → 24 ms.
 */
import { randomBytes } from 'node:crypto'
import { preloadX509, prepareCertificateEncoder } from '../../atls/index.js'
import { hashInitSecret, INIT_SECRET_LENGTH } from '../../kms/index.js'
import { renderAuditPolicy } from '../kubeadm/kubeadm-config.js'

export async function prepareInitPath(): Promise<void> {
  const der = await prepareCertificateEncoder()
  ;(await preloadX509()).readCertificateView(der)
  // hashing runs the same rounds as the check; the throwaway secret is random, so no known hash
  // of anything is ever computed on the node
  await hashInitSecret(randomBytes(INIT_SECRET_LENGTH))
  renderAuditPolicy()
}
