/**
 * What the first Init runs for the first time is slow: V8 runs it in the interpreter until it is hot
 * (and compiles it first, where the code cache was not trained yet, see bin/run.js). The parts that
 * cost most are pure, so the daemon runs them once with throwaway input while it waits for its
 * operator: the certificate encoder (the aTLS certificate of the first handshake) and decoder (the
 * kubelet's certificate names the CA's subject), the request's decoding and the key derivation from
 * its KMS URI, bcrypt (the init secret's check), the YAML writer (kubeadm's files) and the answer's
 * encoding. By the init bench, Init request → kubeadm 35 → 24 ms; with the request, keys, kubeadm
 * config and answer added, Init request → node lock 15.7 → 11.7 ms (alternated runs).
 */
import { randomBytes } from 'node:crypto'
import { InitRequest, InitResponse } from '../../../gen/init.js'
import { preloadX509, prepareCertificateEncoder } from '../../atls/index.js'
import { MEASUREMENT_SALT_BYTES } from '../../contract/index.js'
import {
  ClusterKms,
  clusterKmsUri,
  deriveClusterId,
  hashInitSecret,
  INIT_SECRET_LENGTH,
  parseClusterKmsUri,
} from '../../kms/index.js'
import type { NodePaths } from '../../paths.js'
import { DEFAULT_KUBERNETES_VERSION } from '../../versions/index.js'
import { kubeadmPaths, renderAuditPolicy, renderKubeadmInitConfig } from '../kubeadm/kubeadm-config.js'

export async function prepareInitPath(paths: NodePaths): Promise<void> {
  const der = await prepareCertificateEncoder()
  ;(await preloadX509()).readCertificateView(der)
  // Every secret here is random and thrown away: no known hash or key of anything is ever computed
  // on the node. Hashing runs the same rounds as the check.
  const request = InitRequest.decode(InitRequest.encode(throwawayRequest()).finish())
  const master = parseClusterKmsUri(request.kmsUri)
  const kms = new ClusterKms(master.key, master.salt)
  deriveClusterId(kms.measurementSecret(), request.measurementSalt)
  kms.diskKey(randomBytes(16).toString('hex'))
  await hashInitSecret(randomBytes(INIT_SECRET_LENGTH))
  renderAuditPolicy()
  renderKubeadmInitConfig({
    kubernetesVersion: request.kubernetesVersion,
    clusterName: request.clusterName,
    nodeName: 'warm-up',
    nodeIP: '192.0.2.1',
    controlPlaneEndpoint: '192.0.2.1',
    certSANs: request.apiserverCertSans,
    serviceCIDR: request.serviceCidr,
    conformance: false,
    paths: kubeadmPaths(paths),
  })
  InitResponse.encode({
    kind: {
      $case: 'initSuccess',
      value: { kubeconfig: randomBytes(4096), ownerId: Buffer.alloc(0), clusterId: randomBytes(32) },
    },
  }).finish()
}

/** An Init request of the usual shape: a component, a measurement, a SAN. */
function throwawayRequest(): InitRequest {
  return InitRequest.fromPartial({
    kmsUri: clusterKmsUri({ key: randomBytes(32), salt: randomBytes(32) }),
    measurementSalt: randomBytes(MEASUREMENT_SALT_BYTES),
    kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
    kubernetesComponents: [
      { url: 'https://example.invalid/kubeadm', hash: `sha256:${'0'.repeat(64)}`, installPath: '/x' },
    ],
    initSecret: randomBytes(INIT_SECRET_LENGTH),
    clusterName: 'warm-up',
    apiserverCertSans: ['192.0.2.1'],
    serviceCidr: '10.96.0.0/12',
    measurements: { 4: { expected: randomBytes(32), warnOnly: false } },
  })
}
