import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { NODE_CONFIG_PATH } from '../lib/paths.js'
import { runJoinService } from '../wiring/joinservice.js'

export default class JoinService extends BaseCommand {
  static override description =
    "Issue join tickets on a control plane to nodes that attest what they run (client-attested aTLS on joinService.listen, port 30090 by default), enforcing the cluster's join-config"
  static override examples = ['<%= config.bin %> joinservice --config /etc/constellation/node-config.yaml']
  static override enableJsonFlag = false
  static override flags = {
    config: Flags.string({ description: 'node config file', default: NODE_CONFIG_PATH }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(JoinService)
    await runJoinService(flags.config)
  }
}
