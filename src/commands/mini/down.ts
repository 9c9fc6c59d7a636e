import { BaseCommand } from '../../base-command.js'
import { SIMULATED_NOTICE, type MiniDownResult } from '../../lib/mini/index.js'
import { runMiniDown } from '../../wiring/mini.js'

export default class MiniDown extends BaseCommand {
  static override description =
    'Stop a local cluster started by `mini up` and remove everything it made: processes, network namespaces, disk images, its workspace files (also after a crashed `mini up`)'
  static override examples = ['<%= config.bin %> mini down -C ./mini']
  static override flags = { ...BaseCommand.workspaceFlag }

  protected override interruptedState(): string {
    return 'part of the cluster may be left; `mini down` again removes the rest (it is safe to repeat)'
  }

  async run(): Promise<MiniDownResult & { simulated: string }> {
    const { flags } = await this.parse(MiniDown)
    const result = await runMiniDown(flags.workspace)
    if (!this.jsonEnabled()) {
      this.log(`Stopped ${result.stoppedProcesses} processes; removed:`)
      for (const what of result.removed) this.log(`  ${what}`)
      this.log(`(${SIMULATED_NOTICE.split(':')[0]}: there was no Kubernetes to stop.)`)
    }
    return { ...result, simulated: SIMULATED_NOTICE }
  }
}
