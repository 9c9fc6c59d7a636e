/** The Kubernetes API as the tool uses it: a bounded client, bootstrap tokens, ConfigMaps, Leases. */
export { openKubeApi, KubeApiError } from './api.js'
export type { KubeApi, KubeApiOptions, SecretObject, ConfigMapData, Lease, LeaseSpec } from './api.js'
export { API_REQUEST_TIMEOUT_MS, readKubeconfig, requestTimeout, statusOf, isNoAnswer } from './client.js'
export {
  apiTokenRegistrar,
  bootstrapTokenSecret,
  BOOTSTRAP_TOKEN_PATTERN,
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
