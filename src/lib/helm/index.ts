/**
 * Helm releases, shared by init's bring-up and upgrades: the pinned release set and its values,
 * the helm binary behind a typed surface, and installing or upgrading one release with rollback.
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
export { helmTimeoutMs, parseHelmTimeout } from './timeout.js'
export { clusterDnsAddress, loadChartOverrides, PINNED_RELEASES, resolveReleases } from './releases.js'
export type { ChartOverride, ClusterFacts, ReleaseTarget } from './releases.js'
export { isValues, mergeValues, valueChanges } from './values.js'
export type { ValueChanges, Values } from './values.js'
export { HELM_RETRY_ATTEMPTS, HELM_RETRY_INTERVAL_MS, upgradeRelease } from './release-upgrade.js'
export type { ReleaseResult, ReleaseToApply, RetryPolicy } from './release-upgrade.js'
export { describeCluster, factsFromWorkspace, KUBEADM_CONFIG } from './cluster-facts.js'
export type { ClusterDescription, WorkspaceFacts } from './cluster-facts.js'
export { checkLocalCharts } from './local-charts.js'
export { prepareBringUp } from './bring-up.js'
export type { BringUp, BringUpDeps, BringUpOptions } from './bring-up.js'
export { API_COMING_UP, kubeconfigServer, listInstalledReleases } from './cluster-reachable.js'
export type { ListReleasesOptions } from './cluster-reachable.js'
