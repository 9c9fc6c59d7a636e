/** The Kubernetes API as the tool uses it: a bounded client, bootstrap tokens, ConfigMaps, Leases. */
export { openKubeApi } from './api.js'
export { openClusterClient } from './cluster-client.js'

export type { KubeconfigSource, KubeNode, KubeObject, ResourceRef } from './objects.js'
export { openNodeAnnotations, openNodeKubeApi } from './node-api.js'
export type { NodeAnnotationsApi } from './node-api.js'
export type { KubeApi, OwnerReference, SecretObject, Lease } from './api.js'
export { API_REQUEST_TIMEOUT_MS, KubeApiError, statusOf, isNoAnswer, requestCaller } from './client.js'
export { openNodeAdmin } from './node-admin.js'
export { preloadClientNodeLibrary } from './client-node.js'
export type { AdminNode, EvictionAnswer, NamedObject, NodeAdmin, NodePod } from './node-admin.js'
export {
  BOOTSTRAP_TOKEN_NODE_LABEL,
  tokenNodeLabelValue,
  apiTokenRegistrar,
  bootstrapTokenSecret,
  createTokenIssuer,
  generateBootstrapToken,
  tokenString,
} from './bootstrap-token.js'
export type { BootstrapToken, RandomBytes, TokenIssuer } from './bootstrap-token.js'
