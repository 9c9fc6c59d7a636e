/** Cluster key management: HKDF derivation, the master secret files, KMS URIs, the cluster ID, the key service. */
export {
  deriveKey,
  deriveClusterId,
  ClusterKms,
  DEK_PREFIX,
  DERIVED_KEY_LENGTH,
  MEASUREMENT_SECRET_KEY_ID,
} from './hkdf.js'
export {
  generateMasterSecret,
  encodeMasterSecret,
  parseMasterSecret,
  writeMasterSecret,
  readMasterSecret,
  readNodeMasterSecret,
  MASTER_SECRET_BYTES,
  MASTER_SALT_BYTES,
} from './master-secret.js'
export type { MasterSecret, NodeMasterSecretFiles } from './master-secret.js'
export {
  deriveResumeKey,
  resumeProof,
  resumeProofKey,
  resumeProofMatches,
  RESUME_PROOF_BYTES,
} from './init-resume.js'
export { clusterKmsUri, parseClusterKmsUri, KmsUriError, NO_STORE_URI } from './uri.js'
export {
  generateInitSecret,
  hashInitSecret,
  checkInitSecret,
  initSecretPassword,
  INIT_SECRET_LENGTH,
  INIT_SECRET_BCRYPT_COST,
  MIN_INIT_SECRET_BYTES,
} from './init-secret.js'
export { createKeyService } from './keyservice-server.js'
export type { KeyService, KeyServiceOptions } from './keyservice-server.js'
export {
  getDataKey,
  KeyServiceClient,
  KeyServiceUnreachableError,
  KeyServiceRefusedError,
  KEY_SERVICE_TIMEOUT_MS,
} from './keyservice-client.js'
export type { GetDataKeyOptions } from './keyservice-client.js'
