import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { SIMULATED_NOTICE } from '../../lib/mini/index.js'
import {
  renderRemovalPlan,
  renderRemovalReport,
  type RemovalPlan,
  type RemovalReport,
} from '../../lib/nodes/index.js'
import { parseDuration } from '../../lib/system/index.js'
import { runNodeRemove } from '../../wiring/nodes.js'

export default class NodeRemove extends BaseCommand {
  static override description =
    "Retire a node of a running cluster: cordon and drain it (evictions, honouring PodDisruptionBudgets), remove a control plane's etcd member (never below a safe quorum), delete the Node, its disk records and its bootstrap tokens, so that its state disk can never rejoin. Shows a plan and asks first (--yes skips)."
  static override examples = [
    '<%= config.bin %> node remove worker-1',
    '<%= config.bin %> node remove worker-1 --yes -C ./mini',
    '<%= config.bin %> node remove worker-1 --yes --json --kubeconfig ./constellation-admin.conf',
  ]
  static override args = { name: Args.string({ description: 'the Node, e.g. worker-1', required: true }) }
  static override flags = {
    ...BaseCommand.workspaceFlag,
    kubeconfig: Flags.file({
      description:
        'kubeconfig of the cluster (default: the workspace admin kubeconfig); with it, no workspace is needed',
    }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'drain-timeout': Flags.string({
      description: 'how long draining may take (refused evictions are tried again every 5s)',
      default: '2m',
    }),
  }

  protected override interruptedState(): string {
    return 'the node may be cordoned and partly drained; run `node remove` again to finish (each step finds what is done)'
  }

  async run(): Promise<{ plan: RemovalPlan; report: RemovalReport; simulated?: string }> {
    const { args, flags } = await this.parse(NodeRemove)
    const drainTimeoutMs = parseDuration(flags['drain-timeout'], '--drain-timeout')
    const json = this.jsonEnabled()
    const result = await runNodeRemove({
      workspace: flags.workspace,
      kubeconfig: flags.kubeconfig,
      name: args.name,
      yes: flags.yes,
      drainTimeoutMs,
      progress: (line) => process.stderr.write(`• ${line}\n`),
      onSimulated: () => process.stderr.write(`${SIMULATED_NOTICE}\n`),
      showPlan: (plan) => (json ? process.stderr : process.stdout).write(`${renderRemovalPlan(plan)}\n`),
    })
    this.log(renderRemovalReport(result.report))
    return {
      plan: result.plan,
      report: result.report,
      ...(result.simulated ? { simulated: SIMULATED_NOTICE } : {}),
    }
  }
}
