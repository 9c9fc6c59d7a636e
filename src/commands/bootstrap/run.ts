import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { createNodeBootstrapper, type BootstrapperConfig } from '../../lib/bootstrapper/index.js'
import { CliError } from '../../lib/errors/index.js'
import { loadNodeConfig, NODE_CONFIG_PATH } from '../../lib/nodeconfig/index.js'

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
    const config = (await loadNodeConfig(flags.config, {
      require: ['initSecretHash', 'stateDisk', 'metadata'],
    })) as BootstrapperConfig
    const daemon = createNodeBootstrapper(config)
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void daemon.stop())
    await daemon.start()
    await daemon.done
    if (daemon.outcome === 'failed')
      throw new CliError(
        'init failed after the node lock was taken; this node cannot be used',
        1,
        'recreate the node',
      )
  }
}
