/**
 * The helm binary adapter: finding helm and its major, every argv it is given, the bound each
 * process runs under, its failures in helm's words, and its output made safe to print. It knows no
 * release: the catalogue (../releases/) and the flows use it through this surface.
 */
export { detectHelm, Helm, DEFAULT_HELM_BOUNDS, parseReleaseList } from './helm.js'
export type { HelmBounds, HelmEnv, HelmProcessDeps, InstalledRelease, ValuesSource } from './helm.js'
export { helmArgs, VERSION_ARGS } from './helm-args.js'
export {
  helmFailureMessage,
  helmRefusedKubeconfig,
  helmSaidUnreachable,
  inHelmWords,
} from './helm-failure.js'
export { printable } from './printable.js'
export { DEFAULT_HELM_TIMEOUT, DEFAULT_HELM_TIMEOUT_MS, parseHelmTimeout } from './timeout.js'
export { isValues, mergeValues, valueChanges } from './values.js'
export type { ValueChanges, Values } from './values.js'
