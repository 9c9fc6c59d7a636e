/** Nodes of a running cluster: retiring one (`constellation node remove`). */
export { NodeNotFoundError, planNodeRemoval, removeNode } from './remove.js'
export type { RemovalPlan, RemovalReport } from './remove.js'
export { renderRemovalPlan, renderRemovalReport } from './render.js'
export { DEFAULT_DRAIN_TIMEOUT_MS } from './drain.js'
export { peerUrlOf } from './etcd.js'
export type { EtcdMembership } from './etcd.js'
