import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { clusterNotice, type MiniNodeRecord } from '../../lib/mini/index.js'
import { abortOnInterrupt, parseDuration } from '../../lib/system/index.js'
import { runMiniReboot } from '../../wiring/mini.js'

export default class MiniReboot extends BaseCommand {
  static override description =
    "Reboot one node of a `mini up` cluster: its services stop and its TPM gets TPM2_Shutdown (--hard: a power cut, everything killed), its TPM restarts (PCRs reset) and its memory is lost; it gets its disk key back from a control plane's join service, or waits for `constellation recover` when no control plane is up. The node boots on its own: Ctrl-C or --timeout end the wait, not the boot."
  static override examples = [
    '<%= config.bin %> mini reboot worker-0 -C ./mini',
    '<%= config.bin %> mini reboot worker-0 -C ./mini --hard',
    '<%= config.bin %> mini reboot control-plane-0 -C ./mini',
  ]
  static override args = { node: Args.string({ description: 'the node, e.g. worker-0', required: true }) }
  static override flags = {
    ...BaseCommand.workspaceFlag,
    timeout: Flags.string({
      description: 'stop waiting when the node is not back after this long (it keeps booting)',
      default: '5m',
    }),
    hard: Flags.boolean({
      description:
        'a power cut: every process of the node (a VM: its QEMU and swtpm) is killed at once and its TPM gets no TPM2_Shutdown, as when a machine crashes; without it a VM node is reset (its reset button: QEMU restarted, no shutdown)',
    }),
  }

  async run(): Promise<{ node: MiniNodeRecord; simulated: string }> {
    const { args, flags } = await this.parse(MiniReboot)
    const notice = await clusterNotice(flags.workspace)
    process.stderr.write(`${notice}\n`)
    const interrupt = abortOnInterrupt()
    try {
      const node = await runMiniReboot(flags.workspace, args.node, {
        timeoutMs: parseDuration(flags.timeout, '--timeout'),
        signal: interrupt.signal,
        hard: flags.hard,
        progress: (line) => process.stderr.write(`• ${line}\n`),
      })
      if (!this.jsonEnabled()) this.log(`${node.name} is back (${node.address}).`)
      return { node, simulated: notice }
    } finally {
      interrupt.release()
    }
  }
}
