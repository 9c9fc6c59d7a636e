import { Flags } from '@oclif/core'
import { attestTimeoutFlag } from '../attest-flags.js'
import { BaseCommand } from '../base-command.js'
import { CliError } from '../lib/errors/index.js'
import { readMiniRecord, SIMULATED_NOTICE } from '../lib/mini/index.js'
import { clusterStatus, renderStatus, type StatusReport } from '../lib/status/index.js'
import { parseAttestTimeout } from '../lib/verify/index.js'
import { statusDeps } from '../wiring/status.js'

export default class Status extends BaseCommand {
  static override description =
    "Show every node's role, whether it attests against the workspace's measurements, whether PCR 15 shows this cluster, and its Kubernetes state; the cluster's Kubernetes version and Helm releases (exit 0 only when all is well)"
  static override examples = ['<%= config.bin %> status -C my-cluster', '<%= config.bin %> status --json']
  static override flags = {
    ...BaseCommand.workspaceFlag,
    kubeconfig: Flags.string({
      description: "the cluster's kubeconfig (default: <workspace>/constellation-admin.conf)",
    }),
    'verify-port': Flags.integer({
      description: "port of each node's verification service (Constellation's 30081)",
      default: 30081,
      min: 1,
      max: 65535,
    }),
    ...attestTimeoutFlag,
  }

  async run(): Promise<StatusReport & { simulated?: string }> {
    const { flags } = await this.parse(Status)
    // a cluster of `mini up`: say that its Kubernetes is simulated, here as everywhere
    const simulated = (await readMiniRecord(flags.workspace)) ? SIMULATED_NOTICE : undefined
    const report = await clusterStatus(
      await statusDeps({
        workspace: flags.workspace,
        kubeconfig: flags.kubeconfig,
        verifyPort: flags['verify-port'],
        timeoutMs: parseAttestTimeout(flags.timeout),
      }),
    )
    if (!this.jsonEnabled()) this.log(renderStatus(report) + (simulated ? `\n${simulated}` : ''))
    if (!report.healthy)
      throw new CliError(
        report.apiError
          ? 'the Kubernetes API could not be read'
          : 'not every node is trusted, of this cluster and Ready',
        {
          data: { ...report, simulated },
          hint: report.apiError ? `check --kubeconfig; ${report.apiError}` : undefined,
        },
      )
    return simulated ? { ...report, simulated } : report
  }
}
