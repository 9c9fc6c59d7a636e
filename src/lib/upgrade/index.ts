/** Helm release upgrades: the plan and its rules, backups, execution with rollback (releases and helm: lib/helm). */
export { prepareUpgrade } from './prepare.js'
export type { HelmDeps, PreparedUpgrade } from './prepare.js'
export { createClusterReader } from './kube-reader.js'
export { executeUpgrade } from './execute.js'
export type { ExecuteDeps, UpgradeReport } from './execute.js'
export { renderPlan, renderReport, planToJson } from './report.js'
