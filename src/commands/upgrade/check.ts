import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { planToJson, prepareUpgrade, renderPlan } from '../../lib/upgrade/index.js'
import { nextKubernetesVersion } from '../../lib/versions/index.js'
import { helmDeps } from '../../wiring/upgrade.js'

export default class UpgradeCheck extends BaseCommand {
  static override description =
    "Show the upgrade plan: each Helm release's installed and target version with the verdict (upgrade, install, skip: why), and the Kubernetes version the cluster can move to next"
  static override examples = [
    '<%= config.bin %> upgrade check',
    '<%= config.bin %> upgrade check -C ./cluster --json',
  ]
  static override flags = {
    ...BaseCommand.workspaceFlag,
    kubeconfig: Flags.file({
      description:
        'kubeconfig of the cluster (default: the workspace admin kubeconfig); with it, no workspace is needed',
    }),
    force: Flags.boolean({ description: 'plan as `upgrade execute --force` would: skip the version rules' }),
  }

  async run(): Promise<
    ReturnType<typeof planToJson> & { kubernetes: { current: string; next: string | null } }
  > {
    const { flags } = await this.parse(UpgradeCheck)
    const { plan, kubernetesVersion } = await prepareUpgrade(
      { workspace: flags.workspace, kubeconfig: flags.kubeconfig, force: flags.force },
      helmDeps(),
    )
    const next = nextKubernetesVersion(kubernetesVersion)
    this.log(renderPlan(plan))
    this.log(
      next
        ? `Kubernetes ${kubernetesVersion}: ${next} is next (\`constellation upgrade apply --kubernetes ${next}\`)`
        : `Kubernetes ${kubernetesVersion}: the newest this CLI supports`,
    )
    return { ...planToJson(plan), kubernetes: { current: kubernetesVersion, next: next ?? null } }
  }
}
