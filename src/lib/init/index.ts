/** The operator side of init: workspace → InitRequest → attested call → kubeconfig and state. */
export { initCluster } from './init.js'
export type { InitResult } from './init.js'
export { initSummary, initWarnings } from './render.js'
export {
  mergeIntoUserKubeconfig,
  nameEntriesAfterCluster,
  removeFromUserKubeconfig,
  userKubeconfigPath,
} from './kubeconfig.js'
