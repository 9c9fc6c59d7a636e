import { Args } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { runMiniExec } from '../../wiring/mini-exec.js'

export default class MiniExec extends BaseCommand {
  static override description =
    "Run a command on a node of a `mini up` cluster and exit with its exit code, its output on this command's stdout and stderr: on a process-mode node in its network namespace and root folder, on a VM (`--machines vm`) inside the guest, through QEMU's guest agent"
  static override examples = [
    '<%= config.bin %> mini exec worker-0 -C ./mini -- ls',
    '<%= config.bin %> mini exec worker-0 -C ./mini -- cryptsetup status state',
  ]
  static override usage = 'mini exec NODE [-C <value>] -- COMMAND [ARG…]'
  static override enableJsonFlag = false
  static override strict = false
  static override args = {
    node: Args.string({ description: 'node name (as `status` lists them)', required: true }),
  }
  static override flags = { ...BaseCommand.workspaceFlag }

  protected override interruptedState(): string {
    return 'the command may have run in part; on a VM it goes on in the guest until it ends (its output is lost)'
  }

  async run(): Promise<void> {
    const { args, argv, flags } = await this.parse(MiniExec)
    // argv holds the node first, then what followed it (oclif drops the `--`)
    const command = (argv as string[]).slice(1)
    const result = await runMiniExec(flags.workspace, args.node, command)
    process.stdout.write(result.stdout)
    process.stderr.write(result.stderr)
    process.exitCode = result.exitCode
  }
}
