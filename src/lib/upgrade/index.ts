/** Helm release upgrades: pinned releases, plan and rules, backups, execution with rollback. */
export { PINNED_RELEASES, resolveReleases, mergeValues, clusterDnsAddress, clusterFacts } from './releases.js'
export type { ReleaseTarget, ClusterFacts, Values } from './releases.js'
export { judgeUpgrade, parseSemver, compareSemver } from './rules.js'
export type { Verdict, RuleOptions } from './rules.js'
export { Helm, HelmCommandError, parseReleaseList, DEFAULT_HELM_BOUNDS } from './helm.js'
export type { HelmEnv, InstalledRelease, HelmBounds } from './helm.js'
export { helmArgs, VERSION_ARGS } from './helm-args.js'
export type { HelmArgs, HelmMajor, ChartSource } from './helm-args.js'
export { printable } from './printable.js'
export { planUpgrade, planChangesCluster } from './plan.js'
export type { UpgradePlan, PlannedRelease } from './plan.js'
export { prepareUpgrade } from './prepare.js'
export type { PrepareOptions, HelmDeps, PreparedUpgrade } from './prepare.js'
export { createClusterReader, readKubeconfig, API_REQUEST_TIMEOUT_MS } from './kube-reader.js'
export type { ClusterReader, ListPage, ReaderOptions } from './kube-reader.js'
export { backupCustomResources, newUpgradeId, createUpgradeFolder, BACKUP_PAGE_SIZE } from './backup.js'
export type { ClusterBackupSummary } from './backup.js'
export { executeUpgrade, DEFAULT_HELM_TIMEOUT } from './execute.js'
export type {
  ExecuteOptions,
  ExecuteDeps,
  Step,
  UpgradeReport,
  ReleaseReport,
  ReleaseOutcome,
} from './execute.js'
export { upgradeRelease, HELM_RETRY_ATTEMPTS, HELM_RETRY_INTERVAL_MS } from './release-upgrade.js'
export type { RetryPolicy } from './release-upgrade.js'
export { renderPlan, renderReport, planToJson, describeInterrupted } from './report.js'
export { parseHelmTimeout, helmTimeoutMs } from './timeout.js'
