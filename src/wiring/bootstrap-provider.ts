/**
 * `bootstrap-data controller` with its production parts: the management cluster of the operator's
 * kubeconfig (CAPI objects, data Secrets, CA Secrets, the leader Lease), each workload cluster
 * through its `<cluster>-kubeconfig` Secret, the shipped templates, crypto randomness, JSON logs.
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import {
  BootstrapController,
  capiResources,
  initLockConfigMap,
  LeaderLease,
  loadOrCreateCaSecrets,
  loadTemplates,
  openCapiApi,
  type CapiCluster,
  type ControllerOptions,
} from '../lib/bootstrapdata/index.js'
import { openKubeApi } from '../lib/kube/index.js'
import { createLogger, serveUntilStopped, type Logger } from '../lib/system/index.js'

export interface ProviderSettings extends ControllerOptions {
  kubeconfig: string
  apiVersion: 'v1beta1' | 'v1beta2'
  tokenTtlMs: number
  leaseNamespace: string
  leaseName: string
  /** Default: host name, pid and a random suffix, as controller-runtime makes it unique. */
  identity?: string
  /** Tests move time forward to see tokens refreshed. */
  clock?: () => Date
}

export async function createBootstrapProvider(
  s: ProviderSettings,
  log: Logger,
): Promise<BootstrapController> {
  const clock = s.clock ?? (() => new Date())
  const [api, kube, templates] = await Promise.all([
    openCapiApi({ file: s.kubeconfig }),
    openKubeApi(s.kubeconfig),
    loadTemplates(),
  ])
  const identity = s.identity ?? `${os.hostname()}_${process.pid}_${randomBytes(4).toString('hex')}`
  const lease = new LeaderLease({
    api: kube,
    namespace: s.leaseNamespace,
    name: s.leaseName,
    identity,
    durationMs: s.leaseDurationMs,
    clock,
  })
  const resources = capiResources(s.apiVersion)
  const deps = {
    api,
    resources,
    initLock: initLockConfigMap(api, resources),
    workload: (text: string, cluster: string) =>
      openCapiApi({ text, what: `the kubeconfig of Cluster ${cluster} (its -kubeconfig Secret)` }),
    authorities: async (cluster: CapiCluster, generate: boolean) =>
      (
        await loadOrCreateCaSecrets(kube, {
          namespace: cluster.metadata.namespace ?? 'default',
          cluster: cluster.metadata.name,
          generate,
          now: clock(),
          owner: ownerOf(cluster),
        })
      ).authorities,
    templates,
    randomBytes,
    clock,
    tokenTtlMs: s.tokenTtlMs,
  }
  return new BootstrapController(deps, lease, log.child('bootstrap-provider', { identity }), s)
}

/** Generated CAs belong to the Cluster: deleting a Machine or its config must not take them along. */
function ownerOf(cluster: { apiVersion: string; kind: string; metadata: { name: string; uid?: string } }) {
  return {
    apiVersion: cluster.apiVersion,
    kind: cluster.kind,
    name: cluster.metadata.name,
    uid: cluster.metadata.uid ?? '',
  }
}

/** The command's daemon: JSON logs on stderr, stopped by SIGINT/SIGTERM; a lost Lease is an error. */
export async function runBootstrapProvider(s: ProviderSettings): Promise<void> {
  const log = createLogger({ format: 'json' })
  await serveUntilStopped(await createBootstrapProvider(s, log))
}
