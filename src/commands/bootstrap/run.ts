import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { NODE_CONFIG_PATH } from '../../lib/paths.js'
import { runBootstrapService } from '../../wiring/bootstrapper.js'

// bin/run.js starts this daemon through src/bootstrap-run.ts, without oclif; this class gives it
// help, usage errors and a place in the command list. Flags here and there must stay the same.
export default class BootstrapRun extends BaseCommand {
  static override description =
    'Run the node bootstrapper: serve Init over aTLS until the node is initialized (systemd runs it once per boot)'
  static override examples = ['<%= config.bin %> bootstrap run --config /etc/constellation/node-config.yaml']
  static override enableJsonFlag = false
  static override flags = {
    config: Flags.string({ description: 'node config file', default: NODE_CONFIG_PATH }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(BootstrapRun)
    await runBootstrapService(flags.config)
  }
}
