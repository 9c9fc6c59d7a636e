/**
 * The operator's side of the join-config the join services follow (`join-config update`): the
 * workspace config's measurements planned against the cluster's, shown, confirmed, then written to
 * kube-system/join-config in one request. Every join service picks it up without a restart.
 */
import { encodeJoinConfig, JOIN_CONFIG_MAP } from '../attestation/index.js'
import {
  clusterJoinMeasurements,
  joinConfigChanged,
  joinMeasurementsFromConfig,
  planJoinConfigUpdate,
  renderJoinConfigUpdate,
  type JoinConfigChange,
} from '../config/index.js'
import type { KubeApi } from '../kube/index.js'
import { workspacePaths } from '../paths.js'
import { JOIN_CONFIG_SYNC_INTERVAL_MS } from './join-config-sync.js'

export interface JoinConfigUpdateOptions {
  workspace: string
  /** The cluster's admin kubeconfig; default: the workspace's. */
  kubeconfig?: string
  /** Update without asking. */
  yes: boolean
}

export interface JoinConfigUpdateDeps {
  openApi: (kubeconfig: string) => Promise<Pick<KubeApi, 'getConfigMap' | 'applyConfigMap'>>
  /** Shows one line to the operator (the plan, what was done). */
  say: (line: string) => void
  /** Asked unless `yes`; false changes nothing. */
  confirm: () => Promise<boolean>
}

export interface JoinConfigUpdateResult {
  configMap: string
  updated: boolean
  changes: JoinConfigChange[]
}

export async function updateJoinConfig(
  opts: JoinConfigUpdateOptions,
  deps: JoinConfigUpdateDeps,
): Promise<JoinConfigUpdateResult> {
  const ws = workspacePaths(opts.workspace)
  const next = await joinMeasurementsFromConfig(ws.config)
  const api = await deps.openApi(opts.kubeconfig ?? ws.adminConf)
  const { namespace, name, key } = JOIN_CONFIG_MAP
  const current = clusterJoinMeasurements((await api.getConfigMap(namespace, name))?.data[key])
  const changes = planJoinConfigUpdate(current, next)
  const result = { configMap: `${namespace}/${name}`, updated: false, changes }
  deps.say(renderJoinConfigUpdate(changes, current !== undefined))
  if (current && joinConfigChanged(changes).length === 0) {
    deps.say('The cluster already enforces these measurements; nothing to update.')
    return result
  }
  if (!(opts.yes || (await deps.confirm()))) {
    deps.say('Nothing was changed.')
    return result
  }
  await api.applyConfigMap(namespace, name, { [key]: encodeJoinConfig(next) })
  deps.say(
    `Updated ${namespace}/${name}. Every join service enforces it within ${JOIN_CONFIG_SYNC_INTERVAL_MS / 1000} s, without a restart.`,
  )
  return { ...result, updated: true }
}
