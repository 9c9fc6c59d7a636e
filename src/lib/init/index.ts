/** The operator side of init: workspace → InitRequest → attested call → kubeconfig and state. */
export { initCluster } from './init.js'
export type { InitOptions, InitDeps, InitResult } from './init.js'
export { buildInitRequest, initEndpoint, INIT_SERVER_PORT } from './request.js'
export { pointAtEndpoint, mergeKubeconfig } from './kubeconfig.js'
export { callInit, NotConnectedError } from './rpc.js'
export type { InitOutcome } from './rpc.js'
export { runInit, initSummary } from './command.js'
export type { InitFlags } from './command.js'
