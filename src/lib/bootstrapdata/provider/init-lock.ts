/**
 * CAPI's control-plane init lock (capi.md §6): the ConfigMap `<cluster>-lock` names the one Machine
 * that gets init data. Created exclusively, so two reconcilers (or a restart) never hand out init
 * data twice; released once the control plane is initialized.
 */
import { KubeApiError, type KubeObject } from '../../kube/index.js'
import { CLUSTER_NAME_LABEL } from '../types.js'
import type { CapiApi } from './capi-api.js'
import type { CapiCluster } from './capi-objects.js'
import type { CapiResources, InitLock } from './types.js'

const LOCK_KEY = 'lock-information'

/** The lock as a ConfigMap in the management cluster, for the reconciler's deps. */
export function initLockConfigMap(api: CapiApi, resources: Pick<CapiResources, 'machines'>): InitLock {
  return {
    acquire: (cluster, machine) => acquireInitLock(api, cluster, machine, resources),
    release: (namespace, cluster) => releaseInitLock(api, namespace, cluster),
  }
}

export async function acquireInitLock(
  api: CapiApi,
  cluster: CapiCluster,
  machine: string,
  resources: Pick<CapiResources, 'machines'>,
): Promise<{ acquired: true } | { acquired: false; reason: string }> {
  const namespace = cluster.metadata.namespace ?? 'default'
  const name = `${cluster.metadata.name}-lock`
  const holderOf = (cm: KubeObject | undefined): string | undefined => {
    try {
      return (JSON.parse(cm?.data?.[LOCK_KEY] ?? '{}') as { machineName?: string }).machineName
    } catch {
      return undefined
    }
  }
  let holder = holderOf(await api.getConfigMap(namespace, name))
  if (holder === undefined) {
    try {
      await api.createConfigMap({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name,
          namespace,
          labels: { [CLUSTER_NAME_LABEL]: cluster.metadata.name },
          ownerReferences: [
            {
              apiVersion: cluster.apiVersion,
              kind: cluster.kind,
              name: cluster.metadata.name,
              uid: cluster.metadata.uid ?? '',
            },
          ],
        },
        data: { [LOCK_KEY]: JSON.stringify({ machineName: machine }) },
      })
      return { acquired: true }
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) throw err
      holder = holderOf(await api.getConfigMap(namespace, name))
    }
  }
  if (holder === machine) return { acquired: true }
  if (holder !== undefined && !(await api.get(resources.machines, namespace, holder))) {
    // The machine that held it is gone: free the lock; the next pass tries again.
    await api.deleteConfigMap(namespace, name)
    return { acquired: false, reason: `the init lock's Machine ${holder} no longer exists; released it` }
  }
  return { acquired: false, reason: `Machine ${holder ?? '?'} is initializing the control plane` }
}

export async function releaseInitLock(api: CapiApi, namespace: string, cluster: string): Promise<void> {
  await api.deleteConfigMap(namespace, `${cluster}-lock`)
}
