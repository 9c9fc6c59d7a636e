/**
 * `init` run again in a workspace whose earlier run may have reached the node: the master secret and
 * the measurement salt of that run derive the cluster ID the node's PCR 15 shows once initialized
 * by it. The handshake accepts the node fresh (PCR 15 zero: a full Init request) or initialized by
 * this workspace (a resume, which never carries the master secret); any other PCR 15 is refused
 * before anything is sent.
 */
import type { InitRequest } from '../../gen/init.js'
import {
  AttestationError,
  clusterIdPcrValue,
  CLUSTER_ID_PCR,
  createValidator,
  requireMeasurements,
  type ValidationResult,
  type Validator,
} from '../attestation/index.js'
import { validatorSettingsForConfig, type ClusterConfig } from '../config/index.js'
import { ClusterKms, deriveClusterId, deriveResumeKey, resumeProof, type MasterSecret } from '../kms/index.js'

/** What the node showed in a verified handshake: never initialized, or initialized with this workspace's secrets. */
export type NodeFound = 'fresh' | 'initialized'

/** The cluster ID a node initialized with this master secret and measurement salt carries in PCR 15. */
export function expectedClusterId(secret: MasterSecret, measurementSalt: Buffer): Buffer {
  return deriveClusterId(new ClusterKms(secret.key, secret.salt).measurementSecret(), measurementSalt)
}

/**
 * The config's validator, PCR 15 aside: zero or `clusterId`'s value passes (nodeFound tells which),
 * anything else is refused inside the handshake, naming the master secret file it does not match.
 */
export function resumableValidator(
  config: ClusterConfig,
  clusterId: Buffer,
  masterSecretFile: string,
): Validator {
  const { variant, measurements, options } = validatorSettingsForConfig(config)
  measurements.delete(CLUSTER_ID_PCR)
  const inner = createValidator(variant, requireMeasurements(measurements), undefined, options)
  const ours = clusterIdPcrValue(clusterId)
  return {
    variant: inner.variant,
    oid: inner.oid,
    validate: async (document, nonce, expected) => {
      const result = await inner.validate(document, nonce, expected)
      const pcr = result.pcrs.get(CLUSTER_ID_PCR)
      if (!pcr || !(pcr.equals(ours) || isZero(pcr)))
        throw new AttestationError(
          `PCR ${CLUSTER_ID_PCR} is ${pcr?.toString('hex') ?? 'missing'}: the node was initialized or joined with another master secret, not the one in ${masterSecretFile} (cluster ID ${clusterId.toString('hex')})`,
        )
      return result
    },
    ...(inner.challengeActivation ? { challengeActivation: inner.challengeActivation.bind(inner) } : {}),
  }
}

export function nodeFound(result: ValidationResult): NodeFound {
  const pcr = result.pcrs.get(CLUSTER_ID_PCR)
  return pcr && isZero(pcr) ? 'fresh' : 'initialized'
}

/** The resume: the init secret and the proof of the master secret, bound to the key this handshake attested. */
export function resumeRequest(initSecret: Buffer, secret: MasterSecret, attestedKey: Buffer): InitRequest {
  return {
    kmsUri: '',
    storageUri: '',
    measurementSalt: Buffer.alloc(0),
    kubernetesVersion: '',
    conformanceMode: false,
    kubernetesComponents: [],
    initSecret,
    clusterName: '',
    apiserverCertSans: [],
    serviceCidr: '',
    measurements: {},
    resumeProof: resumeProof(deriveResumeKey(secret), attestedKey),
  }
}

const isZero = (b: Buffer) => b.every((x) => x === 0)
