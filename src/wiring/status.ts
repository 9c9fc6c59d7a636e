/**
 * `constellation status` with its production parts: the workspace (attestation, cluster ID, the
 * first node), the Kubernetes API of its kubeconfig, aTLS to every node's verification service,
 * and helm (when on PATH) for the releases.
 */
import { loadConfig, loadStateIfPresent, validatorSettingsForConfig } from '../lib/config/index.js'
import { ExitCode } from '../lib/errors/index.js'
import { detectHelm } from '../lib/helm/index.js'
import { workspacePaths } from '../lib/paths.js'
import { readClusterView, type StatusDeps } from '../lib/status/index.js'
import { createRunner, readEndpoint } from '../lib/system/index.js'
import { verifyNode } from '../lib/verify/index.js'

export interface StatusSettings {
  workspace: string
  kubeconfig?: string
  verifyPort: number
  timeoutMs: number
}

export async function statusDeps(s: StatusSettings): Promise<StatusDeps> {
  const paths = workspacePaths(s.workspace)
  const { variant, measurements, options } = validatorSettingsForConfig(await loadConfig(paths.config))
  const state = await loadStateIfPresent(paths.state)
  const clusterId = state?.clusterValues.clusterID || undefined
  const kubeconfig = s.kubeconfig ?? paths.adminConf
  const endpoint = state?.infrastructure.clusterEndpoint
  return {
    readCluster: () => readClusterView(kubeconfig),
    verify: async (target) => {
      const outcome = await verifyNode({
        endpoint: target,
        variant,
        validatorOptions: options,
        measurements,
        clusterId,
        timeoutMs: s.timeoutMs,
      })
      return {
        report: outcome.report,
        error: outcome.error && {
          message: outcome.error.message,
          unreachable: outcome.error.exitCode === ExitCode.Unreachable,
        },
      }
    },
    releases: async () =>
      (await detectHelm({ runner: createRunner(), env: process.env }, kubeconfig)).listReleases(),
    variant,
    fallbackHost: endpoint
      ? readEndpoint(endpoint, `${paths.state}: infrastructure.clusterEndpoint`, s.verifyPort).host
      : undefined,
    verifyPort: s.verifyPort,
  }
}
