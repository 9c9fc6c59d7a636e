import { Flags } from '@oclif/core'
import { BaseCommand } from '../base-command.js'
import { renderRecoverResult } from '../lib/recover/index.js'
import { runRecover, type RecoverOutcome } from '../wiring/recover.js'

export default class Recover extends BaseCommand {
  static override description =
    "Give a rebooted node its state-disk key when no join service can (every control plane rebooted): attest the node's recovery endpoint against the workspace's measurements, then send the master secret; asks first when the workspace's attestation variant anchors no key (qemu-vtpm) (exit 0 recovered or declined, 1 refused, 2 no confirmation, 3 unreachable, 4 attestation failed)"
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
    yes: Flags.boolean({
      char: 'y',
      description:
        "send the master secret without asking, also when the workspace's attestation variant does not anchor the node's key (qemu-vtpm)",
    }),
  }

  protected override interruptedState(): string {
    return 'the master secret is sent only after the node attested (and, with qemu-vtpm, after your yes); a node that got it goes on booting, one that did not still waits: run recover again'
  }

  async run(): Promise<RecoverOutcome> {
    const { flags } = await this.parse(Recover)
    const result = await runRecover(
      { workspace: flags.workspace, endpoint: flags.endpoint, timeout: flags.timeout, yes: flags.yes },
      { warn: (line) => this.logToStderr(line), json: this.jsonEnabled() },
    )
    this.log('declined' in result ? 'Nothing was sent.' : renderRecoverResult(result))
    return result
  }
}
