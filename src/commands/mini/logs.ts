import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { showNodeLogs } from '../../lib/mini/index.js'

export default class MiniLogs extends BaseCommand {
  static override description =
    "Show a node's service logs (bootstrap, state-disk, swtpm, verifyservice, and on control planes joinservice and keyservice): every service, each line named by it, or one as it is; -f follows them"
  static override examples = [
    '<%= config.bin %> mini logs control-plane-0 -C ./mini',
    '<%= config.bin %> mini logs worker-0 bootstrap -f -C ./mini',
  ]
  static override enableJsonFlag = false
  static override args = {
    node: Args.string({ description: 'node name (as `status` lists them)', required: true }),
    service: Args.string({ description: 'one service; all of them when left out' }),
  }
  static override flags = {
    ...BaseCommand.workspaceFlag,
    follow: Flags.boolean({ char: 'f', description: 'keep showing what is appended, until Ctrl-C' }),
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MiniLogs)
    await showNodeLogs(
      { workspace: flags.workspace, node: args.node, service: args.service, follow: flags.follow },
      (text) => process.stdout.write(text),
    )
  }
}
