/** `constellation recover`: the operator's side of a rebooted node's recovery (the node's side is statedisk's RecoveryServer). */
export { recoverNode, recoveryEndpoint, renderRecoverResult } from './recover.js'
export type { RecoverResult } from './recover.js'
