import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { NODE_CONFIG_PATH } from '../lib/paths.js'
import { runUpgradeAgent } from '../wiring/upgrade-agent.js'

export default class UpgradeAgentCommand extends BaseCommand {
  static override description =
    "Run this node's step of a Kubernetes upgrade when its Node object asks for one (annotation upgrade.constellation.edgeless.systems/kubernetes): components verified first, then kubeadm upgrade apply or node, then the kubelet; the outcome goes back to the Node"
  static override examples = ['<%= config.bin %> upgrade-agent --config /etc/constellation/node-config.yaml']
  static override enableJsonFlag = false
  static override flags = {
    config: Flags.string({ description: 'node config file', default: NODE_CONFIG_PATH }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(UpgradeAgentCommand)
    await runUpgradeAgent(flags.config)
  }
}
