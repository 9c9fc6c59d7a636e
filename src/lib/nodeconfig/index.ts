/** The node config: what a node's `bootstrap run` and `verifyservice` read at start. */
export {
  kubernetesNodeName,
  DEFAULT_INIT_SERVER_LISTEN,
  DEFAULT_VERIFY_SERVICE_LISTEN,
  DEFAULT_JOIN_SERVICE_LISTEN,
  DEFAULT_KEY_SERVICE_LISTEN,
  DEFAULT_RECOVERY_SERVER_LISTEN,
  BOOTSTRAPPER_REQUIRED_KEYS,
  loadNodeConfig,
  loadBootstrapperNodeConfig,
  loadResolvedNodeConfig,
  parseBootstrapperNodeConfig,
  parseNodeConfig,
} from './node-config.js'
export type {
  NodeRole,
  NodeMember,
  NodeConfig,
  StaticMetadata,
  ResolvedMetadata,
  HttpMetadata,
  BootstrapperNodeConfigFile,
  BootstrapperNodeConfig,
  LoadNodeConfigOptions,
} from './node-config.js'
export { readNodeState, writeNodeState } from './node-state.js'
export { fetchMetadataPeers, httpMetadataClient, resolveMetadata } from './metadata.js'
export type { MetadataClient, ResolvedNodeConfig } from './metadata.js'
export type { NodeState, NodeStateRole } from './node-state.js'
