import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { routeGrpcLogs } from '../lib/grpc/index.js'
import { loadNodeConfig } from '../lib/nodeconfig/index.js'
import { NODE_CONFIG_PATH } from '../lib/paths.js'
import { createLogger } from '../lib/system/index.js'
import { createVerifyService } from '../lib/verify/index.js'

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
    const config = await loadNodeConfig(flags.config)
    const log = createLogger({ format: 'json' })
    routeGrpcLogs(log)
    const daemon = createVerifyService(config, log)
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void daemon.stop())
    await daemon.start()
    await daemon.done
  }
}
