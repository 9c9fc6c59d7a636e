import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { NODE_CONFIG_PATH } from '../../lib/paths.js'
import { runStateDiskSetup } from '../../wiring/state-disk.js'

export default class StateDiskSetup extends BaseCommand {
  static override description =
    "Prepare the node's state disk at boot (systemd runs it before bootstrap run): format a new disk with a random key, or get a rebooted node's disk key from a join service or `constellation recover`, open the disk and restore PCR 15"
  static override examples = [
    '<%= config.bin %> state-disk setup --config /etc/constellation/node-config.yaml',
  ]
  static override enableJsonFlag = false
  static override flags = {
    config: Flags.string({ description: 'node config file', default: NODE_CONFIG_PATH }),
    // `constellation mini` only: hosts without device-mapper check the key but map nothing
    'simulate-mapping': Flags.boolean({ hidden: true }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(StateDiskSetup)
    await runStateDiskSetup(flags.config, { simulateMapping: flags['simulate-mapping'] })
  }
}
