/** The node upgrade protocol: the request and status annotations on a node's own Node object. */
export {
  UPGRADE_REQUEST_ANNOTATION,
  UPGRADE_STATUS_ANNOTATION,
  NODE_UPGRADE_STEPS,
  encodeRequest,
  parseRequest,
  parseStatus,
  requestId,
} from './protocol.js'
export type { AgentRequest, AgentStatus, NodeUpgradeRequest, NodeUpgradeStep } from './protocol.js'
export { COMPONENTS_NAMESPACE, componentsConfigMapName, readClusterVersion } from './cluster-version.js'
