import { Flags } from '@oclif/core'
import { BaseCommand } from '../../base-command.js'
import { encodeJoinConfig, JOIN_CONFIG_MAP } from '../../lib/attestation/index.js'
import {
  clusterJoinMeasurements,
  joinConfigChanged,
  JOIN_CONFIG_REQUEST_TIMEOUT_MS,
  joinMeasurementsFromConfig,
  planJoinConfigUpdate,
  renderJoinConfigUpdate,
  type JoinConfigChange,
} from '../../lib/config/index.js'
import { JOIN_CONFIG_SYNC_INTERVAL_MS } from '../../lib/joinservice/index.js'
import { openKubeApi } from '../../lib/kube/index.js'
import { workspacePaths } from '../../lib/paths.js'

export interface JoinConfigUpdateResult {
  configMap: string
  updated: boolean
  changes: JoinConfigChange[]
}

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
    const ws = workspacePaths(flags.workspace)
    const next = await joinMeasurementsFromConfig(ws.config)
    const api = await openKubeApi(flags.kubeconfig ?? ws.adminConf, {
      requestTimeoutMs: JOIN_CONFIG_REQUEST_TIMEOUT_MS,
    })
    const { namespace, name, key } = JOIN_CONFIG_MAP
    const current = clusterJoinMeasurements((await api.getConfigMap(namespace, name))?.data[key])
    const changes = planJoinConfigUpdate(current, next)
    const result = { configMap: `${namespace}/${name}`, updated: false, changes }
    this.log(renderJoinConfigUpdate(changes, current !== undefined))
    if (current && joinConfigChanged(changes).length === 0) {
      this.log('The cluster already enforces these measurements; nothing to update.')
      return result
    }
    const go =
      flags.yes ||
      (await this.confirmChange("Update the cluster's join-config?", "update the cluster's join-config"))
    if (!go) {
      this.log('Nothing was changed.')
      return result
    }
    await api.applyConfigMap(namespace, name, { [key]: encodeJoinConfig(next) })
    this.log(
      `Updated ${namespace}/${name}. Every join service enforces it within ${JOIN_CONFIG_SYNC_INTERVAL_MS / 1000} s, without a restart.`,
    )
    return { ...result, updated: true }
  }
}
