/** The Kubernetes API as the tool uses it: a bounded client, bootstrap tokens, ConfigMaps, Leases. */
export { openKubeApi } from './api.js'
export { openClusterClient } from './cluster-client.js'
export type { ClusterClient, ClusterClientOptions } from './cluster-client.js'
export type { KubeconfigSource, KubeNode, KubeObject, ObjectMeta, ResourceRef } from './objects.js'
export { openNodeKubeApi } from './node-api.js'
export type {
  KubeApi,
  KubeApiOptions,
  OwnerReference,
  SecretObject,
  ConfigMapData,
  NamedConfigMap,
  Lease,
  LeaseSpec,
} from './api.js'
export { API_REQUEST_TIMEOUT_MS, KubeApiError, statusOf, isNoAnswer, requestCaller } from './client.js'
export {
  apiTokenRegistrar,
  bootstrapTokenSecret,
  BOOTSTRAP_TOKEN_TTL_MS,
  createTokenIssuer,
  generateBootstrapToken,
  TokenIdTakenError,
  tokenString,
} from './bootstrap-token.js'
export type {
  BootstrapToken,
  RandomBytes,
  TokenIssuer,
  TokenIssuerOptions,
  TokenRegistrar,
} from './bootstrap-token.js'
