import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import type { JoinConfigUpdateResult } from '../../lib/joinservice/index.js'
import { runJoinConfigUpdate } from '../../wiring/join-config.js'

export default class JoinConfigUpdate extends BaseCommand {
  static override description =
    "Make the cluster's join services enforce the measurements of constellation-conf.yaml on joining nodes (the kube-system/join-config ConfigMap, written with the admin kubeconfig; no restart needed)"
  static override examples = [
    '<%= config.bin %> join-config update',
    '<%= config.bin %> join-config update -C my-cluster --yes --json',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    kubeconfig: Flags.file({
      description: "the cluster's admin kubeconfig (default: constellation-admin.conf in the workspace)",
    }),
    yes: Flags.boolean({ char: 'y', description: 'update without asking' }),
  }

  protected override interruptedState(): string {
    return "the cluster's join-config is as it was, or fully updated (it is written in one request); `join-config update` again shows which"
  }

  async run(): Promise<JoinConfigUpdateResult> {
    const { flags } = await this.parse(JoinConfigUpdate)
    return runJoinConfigUpdate(
      { workspace: flags.workspace, kubeconfig: flags.kubeconfig, yes: flags.yes },
      {
        say: (line) => this.log(line),
        confirm: () =>
          this.confirmChange("Update the cluster's join-config?", "update the cluster's join-config"),
      },
    )
  }
}
