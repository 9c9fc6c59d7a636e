import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { NODE_CONFIG_PATH } from '../lib/paths.js'
import { runKeyService } from '../wiring/keyservice.js'

export default class KeyService extends BaseCommand {
  static override description =
    "Serve the cluster's data keys (kms.API/GetDataKey) on a control plane, derived from the master secret init persisted; plain gRPC on keyService.listen (loopback by default)"
  static override examples = ['<%= config.bin %> keyservice --config /etc/constellation/node-config.yaml']
  static override enableJsonFlag = false
  static override flags = {
    config: Flags.string({ description: 'node config file', default: NODE_CONFIG_PATH }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(KeyService)
    await runKeyService(flags.config)
  }
}
