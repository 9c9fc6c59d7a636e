/** `constellation recover`: the operator's side of a rebooted node's recovery (the node's side is statedisk's RecoveryServer). */
export { recoverNode, recoveryEndpoint, renderRecoverResult, RECOVERY_PORT } from './recover.js'
export type { RecoverDeps, RecoverOptions, RecoverResult } from './recover.js'
