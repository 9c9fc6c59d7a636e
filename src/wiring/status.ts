/**
 * `constellation status` with its production parts: the workspace (measurements, cluster ID, the
 * first node), the Kubernetes API of its kubeconfig, aTLS to every node's verification service,
 * and helm (when on PATH) for the releases.
 */
import { measurementsFromConfig } from '../lib/attestation/index.js'
import { loadConfig, loadStateIfPresent } from '../lib/config/index.js'
import { CliError, ExitCode } from '../lib/errors/index.js'
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
  const config = await loadConfig(paths.config)
  const measurements = config.attestation.qemuVTPM?.measurements
  if (!measurements)
    throw new CliError('the config has no attestation.qemuVTPM.measurements to verify against')
  const state = await loadStateIfPresent(paths.state)
  const clusterId = state?.clusterValues.clusterID || undefined
  const kubeconfig = s.kubeconfig ?? paths.adminConf
  const endpoint = state?.infrastructure.clusterEndpoint
  return {
    readCluster: () => readClusterView(kubeconfig),
    verify: async (target) => {
      const outcome = await verifyNode({
        endpoint: target,
        variant: 'qemu-vtpm',
        measurements: measurementsFromConfig(measurements),
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
    fallbackHost: endpoint
      ? readEndpoint(endpoint, `${paths.state}: infrastructure.clusterEndpoint`, s.verifyPort).host
      : undefined,
    verifyPort: s.verifyPort,
  }
}
