/** What init prints on success: the summary (stdout) and the warnings (stderr). */
import type { InitResult } from './init.js'

/** The lines init prints to stdout on success (without --json). */
export function initSummary(result: InitResult): string[] {
  return [
    result.resumed
      ? 'Your Constellation cluster was initialized by an earlier init of this workspace, which was cut off; this run resumed it and saved its results.'
      : 'Your Constellation cluster was successfully initialized.',
    `  Cluster identifier        ${result.clusterID}`,
    `  Kubernetes configuration  ${result.kubeconfig}`,
    `  Master secret             ${result.masterSecret} (${result.masterSecretSource === 'reused' ? 'reused from an earlier attempt; ' : ''}keep it safe: it recovers the cluster)`,
    ...(result.releases.length
      ? [`  Helm releases             ${result.releases.map((r) => `${r.name} ${r.version}`).join(', ')}`]
      : []),
    result.mergedInto
      ? `Merged into ${result.mergedInto}; its current context is the new cluster.`
      : `To use the cluster: export KUBECONFIG="${result.kubeconfig}"`,
    '',
    ...result.nextSteps,
  ]
}

/** The lines init prints to stderr on success (without --json, where `warnings` carries them). */
export function initWarnings(result: InitResult): string[] {
  return result.warnings.map((w) => `Warning: ${w}`)
}
