/**
 * Helm, shared by init's bring-up and upgrades, in two rooms: binary/ is the helm binary behind a
 * typed surface (argv, bounds, failures, printable output); releases/ is the catalogue (the pinned
 * release set and its values, cluster facts, the bring-up, one release applied with rollback).
 */
export {
  detectHelm,
  Helm,
  DEFAULT_HELM_TIMEOUT,
  DEFAULT_HELM_TIMEOUT_MS,
  parseHelmTimeout,
  mergeValues,
  valueChanges,
} from './binary/index.js'
export type { HelmProcessDeps, InstalledRelease, ValueChanges } from './binary/index.js'
export { loadChartOverrides, resolveReleases } from './releases/releases.js'
export type { ReleaseTarget } from './releases/releases.js'
export { upgradeRelease } from './releases/release-upgrade.js'
export type { RetryPolicy } from './releases/release-upgrade.js'
export { describeCluster } from './releases/cluster-facts.js'

export { checkLocalCharts } from './releases/local-charts.js'
export { prepareBringUp } from './releases/bring-up.js'
export type { BringUp } from './releases/bring-up.js'
export { listInstalledReleases } from './releases/cluster-reachable.js'
