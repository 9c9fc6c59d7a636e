import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { CliError, UsageError } from '../../lib/errors/index.js'
import { DEFAULT_HELM_TIMEOUT, parseHelmTimeout } from '../../lib/helm/index.js'
import {
  executeUpgrade,
  planToJson,
  prepareUpgrade,
  renderPlan,
  renderReport,
  type UpgradeReport,
} from '../../lib/upgrade/index.js'
import { executeDeps, helmDeps } from '../../wiring/upgrade.js'

export default class UpgradeExecute extends BaseCommand {
  static override description =
    'Upgrade the Helm releases of the cluster: plan, confirm, back up CRDs, custom resources and charts, then upgrade release by release with rollback on failure'
  static override examples = [
    '<%= config.bin %> upgrade execute --helm',
    '<%= config.bin %> upgrade execute --helm --yes --helm-timeout 15m',
    '<%= config.bin %> upgrade execute --helm --dry-run --json',
    '<%= config.bin %> upgrade execute --helm --kubeconfig ~/.kube/config',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    helm: Flags.boolean({ description: 'upgrade the Helm releases (the only phase so far)' }),
    kubeconfig: Flags.file({
      description:
        'kubeconfig of the cluster (default: the workspace admin kubeconfig); with it, no workspace is needed',
    }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    force: Flags.boolean({ description: 'skip the version rules (downgrades, same version, minor jumps)' }),
    'dry-run': Flags.boolean({ description: 'show what would happen; change nothing, write no backup' }),
    'helm-timeout': Flags.string({
      description: 'time each release may take to become ready, and again for an explicit rollback',
      default: DEFAULT_HELM_TIMEOUT,
    }),
  }

  async run(): Promise<UpgradeReport & { plan: ReturnType<typeof planToJson> }> {
    const { flags } = await this.parse(UpgradeExecute)
    if (!flags.helm) throw new UsageError('say what to upgrade', 'pass --helm to upgrade the Helm releases')
    const helmTimeoutMs = parseHelmTimeout(flags['helm-timeout'])
    const prepared = await prepareUpgrade(
      { workspace: flags.workspace, kubeconfig: flags.kubeconfig, force: flags.force },
      helmDeps(),
    )
    this.log(renderPlan(prepared.plan))
    const report = await executeUpgrade(
      prepared,
      { workspace: flags.workspace, yes: flags.yes, dryRun: flags['dry-run'], helmTimeoutMs },
      executeDeps(prepared, { json: this.jsonEnabled() }),
    )
    this.log(renderReport(report))
    const result = { ...report, plan: planToJson(prepared.plan) }
    // The report (or the JSON) is the result; the error line and exit code tell scripts it failed.
    if (report.failure)
      throw new CliError(`upgrade stopped at ${report.failure.release}; see the report`, { data: result })
    return result
  }
}
