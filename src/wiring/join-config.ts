/**
 * `constellation join-config update` with its production parts: the Kubernetes API through the
 * admin kubeconfig, bounded as helm bounds its requests.
 */
import { JOIN_CONFIG_REQUEST_TIMEOUT_MS } from '../lib/config/index.js'
import {
  updateJoinConfig,
  type JoinConfigUpdateDeps,
  type JoinConfigUpdateOptions,
  type JoinConfigUpdateResult,
} from '../lib/joinservice/index.js'
import { openKubeApi } from '../lib/kube/index.js'

export function runJoinConfigUpdate(
  opts: JoinConfigUpdateOptions,
  io: Pick<JoinConfigUpdateDeps, 'say' | 'confirm'>,
): Promise<JoinConfigUpdateResult> {
  return updateJoinConfig(opts, {
    ...io,
    openApi: (kubeconfig) => openKubeApi(kubeconfig, { requestTimeoutMs: JOIN_CONFIG_REQUEST_TIMEOUT_MS }),
  })
}
