/**
 * Helm, shared by init's bring-up and upgrades, in two rooms: binary/ is the helm binary behind a
 * typed surface (argv, bounds, failures, printable output); releases/ is the catalogue (the pinned
 * release set and its values, cluster facts, the bring-up, one release applied with rollback).
 */
export {
  detectHelm,
  Helm,
  DEFAULT_HELM_BOUNDS,
  parseReleaseList,
  helmArgs,
  VERSION_ARGS,
  helmFailureMessage,
  helmRefusedKubeconfig,
  helmSaidUnreachable,
  inHelmWords,
  printable,
  DEFAULT_HELM_TIMEOUT,
  DEFAULT_HELM_TIMEOUT_MS,
  parseHelmTimeout,
  isValues,
  mergeValues,
  valueChanges,
} from './binary/index.js'
export type {
  HelmBounds,
  HelmEnv,
  HelmProcessDeps,
  InstalledRelease,
  ValuesSource,
  ValueChanges,
  Values,
} from './binary/index.js'
export {
  clusterDnsAddress,
  loadChartOverrides,
  PINNED_RELEASES,
  resolveReleases,
} from './releases/releases.js'
export type { ChartOverride, ClusterFacts, ReleaseTarget } from './releases/releases.js'
export { HELM_RETRY_ATTEMPTS, HELM_RETRY_INTERVAL_MS, upgradeRelease } from './releases/release-upgrade.js'
export type { ReleaseResult, ReleaseToApply, RetryPolicy } from './releases/release-upgrade.js'
export { describeCluster, factsFromWorkspace, KUBEADM_CONFIG } from './releases/cluster-facts.js'
export type { ClusterDescription, WorkspaceFacts } from './releases/cluster-facts.js'
export { checkLocalCharts } from './releases/local-charts.js'
export { prepareBringUp } from './releases/bring-up.js'
export type { BringUp, BringUpDeps, BringUpOptions } from './releases/bring-up.js'
export { API_COMING_UP, kubeconfigServer, listInstalledReleases } from './releases/cluster-reachable.js'
export type { ListReleasesOptions } from './releases/cluster-reachable.js'
