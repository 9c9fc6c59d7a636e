import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { clusterNotice, type MiniRemoveResult } from '../../lib/mini/index.js'
import { renderRemovalReport } from '../../lib/nodes/index.js'
import { parseDuration } from '../../lib/system/index.js'
import { runMiniRemove } from '../../wiring/mini.js'

export default class MiniRemove extends BaseCommand {
  static override description =
    'Retire a node of a `mini up` cluster: `constellation node remove` (drain, etcd, the Node, its disk records and tokens), then power it off and delete its files. Shows a plan and asks first (--yes skips).'
  static override examples = ['<%= config.bin %> mini remove worker-1 --yes -C ./mini']
  static override args = { node: Args.string({ description: 'the node, e.g. worker-1', required: true }) }
  static override flags = {
    ...BaseCommand.workspaceFlag,
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'drain-timeout': Flags.string({ description: 'how long draining may take', default: '2m' }),
  }

  async run(): Promise<MiniRemoveResult & { simulated: string }> {
    const { args, flags } = await this.parse(MiniRemove)
    const notice = await clusterNotice(flags.workspace)
    process.stderr.write(`${notice}\n`)
    const json = this.jsonEnabled()
    const result = await runMiniRemove(
      {
        workspace: flags.workspace,
        name: args.node,
        yes: flags.yes,
        drainTimeoutMs: parseDuration(flags['drain-timeout'], '--drain-timeout'),
      },
      {
        progress: (line) => process.stderr.write(`• ${line}\n`),
        showPlan: (text) => (json ? process.stderr : process.stdout).write(`${text}\n`),
      },
    )
    const machine = `  ${result.node.name} is powered off; removed ${result.removed.join(', ')}`
    this.log(renderRemovalReport(result.removal, machine))
    return { ...result, simulated: notice }
  }
}
