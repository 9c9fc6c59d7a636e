import { Flags } from '@oclif/core'
import { attestTimeoutFlag } from '../attest-flags.js'
import { BaseCommand } from '../base-command.js'
import { CliError } from '../lib/errors/index.js'
import { readMiniRecord, simulatedNotice } from '../lib/mini/index.js'
import { clusterStatus, renderStatus, watchStatus, type StatusReport } from '../lib/status/index.js'
import { formatDuration, parseDuration } from '../lib/system/index.js'
import { inPlace, processTerminal } from '../lib/ui/index.js'
import { parseAttestTimeout } from '../lib/verify/index.js'
import { statusDeps } from '../wiring/status.js'

export default class Status extends BaseCommand {
  static override description =
    "Show every node's role, whether it attests against the workspace's measurements, whether PCR 15 shows this cluster, and its Kubernetes state; the cluster's Kubernetes version and Helm releases (exit 0 only when all is well)"
  static override examples = [
    '<%= config.bin %> status -C my-cluster',
    '<%= config.bin %> status --json',
    '<%= config.bin %> status -C my-cluster --watch',
  ]
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
    watch: Flags.boolean({
      char: 'w',
      description:
        'show it again every --interval until Ctrl-C (exit 130): redrawn in place on a terminal, printed again only when it changed otherwise (--json: one line per change)',
    }),
    interval: Flags.string({
      description: 'how often --watch reads the status (e.g. 2s, 1m)',
      default: '2s',
    }),
  }

  async run(): Promise<StatusReport & { simulated?: string }> {
    const { flags } = await this.parse(Status)
    // a cluster of `mini up`: say that its Kubernetes is simulated, here as everywhere
    const record = await readMiniRecord(flags.workspace)
    const simulated = record ? simulatedNotice(record.machines) : undefined
    const deps = await statusDeps({
      workspace: flags.workspace,
      kubeconfig: flags.kubeconfig,
      verifyPort: flags['verify-port'],
      timeoutMs: parseAttestTimeout(flags.timeout),
    })
    const text = (report: StatusReport) => renderStatus(report) + (simulated ? `\n${simulated}` : '')
    if (flags.watch)
      return this.watch(flags.interval, async () => {
        const report = await clusterStatus(deps)
        return this.jsonEnabled() ? JSON.stringify({ ...report, simulated }) : text(report)
      })
    const report = await clusterStatus(deps)
    if (!this.jsonEnabled()) this.log(text(report))
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

  /** Until Ctrl-C, which the base command answers (130, "nothing was changed"). */
  private async watch(interval: string, read: () => Promise<string>): Promise<never> {
    const intervalMs = parseDuration(interval, '--interval')
    const terminal = processTerminal()
    const live = terminal.stdoutIsTTY && !this.jsonEnabled()
    const draw = inPlace(
      (t) => process.stdout.write(t),
      () => process.stdout.columns,
    )
    const title = `Every ${formatDuration(intervalMs)}: constellation status ${this.argv.join(' ')}`
    await watchStatus({
      read,
      intervalMs,
      onlyChanges: !live,
      show: ({ text, at }) => {
        if (live) draw(`${title}    ${at.toLocaleTimeString()} (Ctrl-C stops)\n\n${text}`)
        else if (this.jsonEnabled()) this.log(text)
        else this.log(`--- ${at.toISOString()}\n${text}`)
      },
    })
    throw new Error('status --watch ended without an interrupt')
  }
}
