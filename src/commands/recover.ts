import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { renderRecoverResult, type RecoverResult } from '../lib/recover/index.js'
import { runRecover } from '../wiring/recover.js'

export default class Recover extends BaseCommand {
  static override description =
    "Give a rebooted node its state-disk key when no join service can (every control plane rebooted): attest the node's recovery endpoint against the workspace's measurements, then send the master secret (exit 0 recovered, 1 refused, 3 unreachable, 4 attestation failed)"
  static override examples = [
    '<%= config.bin %> recover -C my-cluster',
    '<%= config.bin %> recover --endpoint 10.0.0.5',
    '<%= config.bin %> recover --endpoint 10.0.0.5:9999 --timeout 10m --json',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    endpoint: Flags.string({
      description:
        "HOST[:PORT] of the waiting node's recovery endpoint (port 9999 unless given; IPv6 in brackets); default: the host of the state's infrastructure.clusterEndpoint",
    }),
    timeout: Flags.string({
      description: 'how long to keep trying while the node does not answer yet (e.g. 90s, 5m)',
      default: '5m',
    }),
  }

  async run(): Promise<RecoverResult> {
    const { flags } = await this.parse(Recover)
    const result = await runRecover({
      workspace: flags.workspace,
      endpoint: flags.endpoint,
      timeout: flags.timeout,
    })
    this.log(renderRecoverResult(result))
    return result
  }
}
