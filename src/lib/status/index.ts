/** `constellation status`: nodes, their attestation and Kubernetes state, the cluster's versions. */
export { readClusterView } from './cluster-view.js'

export { clusterStatus } from './status.js'
export type { StatusDeps, StatusReport } from './status.js'
export { renderStatus } from './render.js'
export { watchStatus } from './watch.js'
