/** The node config: what a node's `bootstrap run` and `verifyservice` read at start. */
export {
  kubernetesNodeName,
  DEFAULT_INIT_SERVER_LISTEN,
  DEFAULT_JOIN_SERVICE_LISTEN,
  loadNodeConfig,
  loadBootstrapperNodeConfig,
  loadResolvedNodeConfig,
  parseBootstrapperNodeConfig,
} from './node-config.js'
export type { NodeRole, NodeMember, NodeConfig, StaticMetadata, ResolvedMetadata } from './node-config.js'
export { readNodeState, writeNodeState } from './node-state.js'
export { fetchMetadataPeers, httpMetadataClient } from './metadata.js'
export type { ResolvedNodeConfig } from './metadata.js'
export type { NodeState } from './node-state.js'
export { nodeCvmSettings } from './attestation.js'
