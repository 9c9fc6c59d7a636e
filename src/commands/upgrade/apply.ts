import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { UsageError } from '../../lib/errors/index.js'
import { SIMULATED_NOTICE } from '../../lib/mini/index.js'
import {
  DEFAULT_NODE_UPGRADE_TIMEOUT_MS,
  renderKubernetesPlan,
  renderKubernetesReport,
  upgradeFailed,
  type KubernetesUpgradeReport,
} from '../../lib/nodes/index.js'
import { formatDuration, parseDuration } from '../../lib/system/index.js'
import { runKubernetesUpgradeCommand } from '../../wiring/kubernetes-upgrade.js'

export default class UpgradeApply extends BaseCommand {
  static override description =
    "Upgrade the cluster's Kubernetes one minor step at a time: a plan is shown and confirmed, then node by node (control planes first) cordon, drain, the node's upgrade agent runs kubeadm upgrade apply/node with the target's sha256-verified components and replaces the kubelet, Ready at the target, uncordon. Interrupted, the same command resumes."
  static override examples = [
    '<%= config.bin %> upgrade apply --kubernetes v1.32.9',
    '<%= config.bin %> upgrade apply --kubernetes v1.32 --yes -C ./mini',
    '<%= config.bin %> upgrade apply --kubernetes v1.32.9 --yes --json --kubeconfig ./constellation-admin.conf',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    kubernetes: Flags.string({
      description:
        'the target Kubernetes version (v1.32 or v1.32.9: a supported patch, one minor above the cluster)',
    }),
    kubeconfig: Flags.file({
      description:
        'kubeconfig of the cluster (default: the workspace admin kubeconfig); with it, no workspace is needed',
    }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'drain-timeout': Flags.string({
      description: 'how long draining one node may take (refused evictions are tried again every 5s)',
      default: '2m',
    }),
    'node-timeout': Flags.string({
      description: "how long one node's step may take, from its request to Ready at the target",
      default: formatDuration(DEFAULT_NODE_UPGRADE_TIMEOUT_MS),
    }),
  }

  protected override interruptedState(): string {
    return 'the node being upgraded finishes its step on its own and stays cordoned; run the same `upgrade apply --kubernetes` again to resume: nodes at the target are not touched again'
  }

  async run(): Promise<{ report: KubernetesUpgradeReport; simulated?: string }> {
    const { flags } = await this.parse(UpgradeApply)
    if (!flags.kubernetes)
      throw new UsageError(
        'say what to upgrade',
        'pass --kubernetes vX.Y.Z (Helm releases: `upgrade execute --helm`)',
      )
    const json = this.jsonEnabled()
    const { report, simulated } = await runKubernetesUpgradeCommand({
      workspace: flags.workspace,
      kubeconfig: flags.kubeconfig,
      version: flags.kubernetes,
      yes: flags.yes,
      drainTimeoutMs: parseDuration(flags['drain-timeout'], '--drain-timeout'),
      nodeTimeoutMs: parseDuration(flags['node-timeout'], '--node-timeout'),
      progress: (line) => process.stderr.write(`• ${line}\n`),
      onSimulated: () => process.stderr.write(`${SIMULATED_NOTICE}\n`),
      showPlan: (plan) => (json ? process.stderr : process.stdout).write(`${renderKubernetesPlan(plan)}\n`),
    })
    this.log(renderKubernetesReport(report))
    const failed = upgradeFailed(report)
    if (failed) throw failed
    return { report, ...(simulated ? { simulated: SIMULATED_NOTICE } : {}) }
  }
}
