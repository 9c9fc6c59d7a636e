/** The join service: join tickets for attested nodes, bootstrap tokens, kubelet certificates, measurements reload. */
export {
  BOOTSTRAP_TOKEN_PATTERN,
  BOOTSTRAP_TOKEN_TTL_MS,
  bootstrapTokenSecret,
  createTokenIssuer,
  TokenIdTakenError,
} from './bootstrap-token.js'
export type { BootstrapTokenSecret, TokenIssuer, TokenRegistrar } from './bootstrap-token.js'
export { caCertHash, loadClusterCa, CONTROL_PLANE_PKI_FILES } from './cluster-ca.js'
export type { ClusterCa, ControlPlaneFile } from './cluster-ca.js'
