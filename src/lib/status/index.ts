/** `constellation status`: nodes, their attestation and Kubernetes state, the cluster's versions. */
export { readClusterView } from './cluster-view.js'
export type { ClusterView, KubernetesNode } from './cluster-view.js'
export { clusterStatus } from './status.js'
export type { NodeStatus, NodeVerdict, StatusDeps, StatusReport } from './status.js'
export { renderStatus } from './render.js'
export { watchStatus } from './watch.js'
export type { WatchFrame, WatchOptions } from './watch.js'
