/** Supported Kubernetes versions, resolving MAJOR.MINOR to the pinned patch, and their components. */
export { DEFAULT_KUBERNETES_VERSION } from './table.js'
export {
  DEFAULT_KUBERNETES_MINOR,
  supportedVersions,
  resolveKubernetesVersion,
  isSupportedVersion,
  componentsFor,
  nextKubernetesVersion,
} from './supported.js'
export type { KubernetesComponent } from './supported.js'
export {
  parseKubernetesVersion,
  isPatchRelease,
  kubernetesMinor,
  kubeadmApiVersion,
} from './kubernetes-version.js'
export { encodeComponents, parseComponents, readComponentsFile } from './components-file.js'
export { compareSemver, parseSemver } from './semver.js'
