import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { NODE_CONFIG_PATH } from '../lib/paths.js'
import { runVerifyService } from '../wiring/verify-service.js'

export default class VerifyService extends BaseCommand {
  static override description =
    "Serve this node's TPM attestation over aTLS so operators can run `constellation verify` against it"
  static override examples = ['<%= config.bin %> verifyservice --config /etc/constellation/node-config.yaml']
  static override enableJsonFlag = false
  static override flags = {
    config: Flags.string({ description: 'node config file', default: NODE_CONFIG_PATH }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(VerifyService)
    await runVerifyService(flags.config)
  }
}
