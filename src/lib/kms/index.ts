/** Cluster key management: HKDF derivation, the master secret files, KMS URIs, the cluster ID, the key service. */
export { deriveClusterId, ClusterKms, MEASUREMENT_SECRET_KEY_ID } from './hkdf.js'
export {
  generateMasterSecret,
  encodeMasterSecret,
  writeMasterSecret,
  readMasterSecret,
  readNodeMasterSecret,
} from './master-secret.js'
export type { MasterSecret } from './master-secret.js'
export {
  deriveResumeKey,
  resumeProof,
  resumeProofKey,
  resumeProofMatches,
  RESUME_PROOF_BYTES,
} from './init-resume.js'
export { clusterKmsUri, parseClusterKmsUri, NO_STORE_URI } from './uri.js'
export {
  generateInitSecret,
  hashInitSecret,
  checkInitSecret,
  INIT_SECRET_LENGTH,
  MIN_INIT_SECRET_BYTES,
} from './init-secret.js'
export { createKeyService } from './keyservice-server.js'
export type { KeyService } from './keyservice-server.js'
export { KeyServiceClient, KeyServiceUnreachableError } from './keyservice-client.js'
export type { DataKeyRequest } from './keyservice-client.js'
