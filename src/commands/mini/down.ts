import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { clusterNotice, type MiniDownResult } from '../../lib/mini/index.js'
import { runMiniDown } from '../../wiring/mini.js'

export default class MiniDown extends BaseCommand {
  static override description =
    'Stop a local cluster started by `mini up` and remove everything it made: processes, network namespaces, disk images, its workspace files (also after a crashed `mini up`, or with its workspace folder deleted); the master secret stays unless --purge'
  static override examples = [
    '<%= config.bin %> mini down -C ./mini',
    '<%= config.bin %> mini down -C ./mini --purge',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    purge: Flags.boolean({
      description:
        "remove the cluster's master secret too (kept by default: every disk key derives from it, nothing it encrypted can be read without it)",
    }),
  }

  protected override interruptedState(): string {
    return 'part of the cluster may be left; `mini down` again removes the rest (it is safe to repeat)'
  }

  async run(): Promise<MiniDownResult & { simulated: string }> {
    const { flags } = await this.parse(MiniDown)
    const notice = await clusterNotice(flags.workspace)
    const result = await runMiniDown(flags.workspace, { purge: flags.purge })
    if (!this.jsonEnabled()) {
      this.log(`Stopped ${result.stoppedProcesses} processes; removed:`)
      for (const what of result.removed) this.log(`  ${what}`)
      for (const file of result.kept)
        this.log(
          `Kept ${file}: the cluster's master secret, from which every disk key derives (for copies of its disks, or backups of what they held); remove it once you no longer need those, or use \`mini down --purge\` next time.`,
        )
      this.log(`(${notice.split(':')[0]}: there was no Kubernetes to stop.)`)
    }
    for (const warning of result.warnings) this.logToStderr(`Warning: ${warning}`)
    return { ...result, simulated: notice }
  }
}
