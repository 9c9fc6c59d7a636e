/**
 * What the bootstrap provider reads and writes in the management cluster, through kube's cluster
 * client: Cluster API objects by resource, the data Secrets, the init-lock ConfigMaps, and watches.
 * Every request is bounded; an error names the request and its HTTP status, never a response body
 * (a Secret could be echoed back).
 */
import {
  API_REQUEST_TIMEOUT_MS,
  openClusterClient,
  requestCaller,
  type KubeconfigSource,
  type KubeObject,
  type OwnerReference,
  type ResourceRef,
} from '../../kube/index.js'
import type { CapiResource } from './capi-objects.js'

export type { KubeconfigSource, OwnerReference, ResourceRef }

export interface CapiApi {
  list<T extends KubeObject>(resource: CapiResource<T>): Promise<T[]>
  get<T extends KubeObject>(
    resource: CapiResource<T>,
    namespace: string,
    name: string,
  ): Promise<T | undefined>
  /** Writes `status` only; 409 when the object changed since it was read. */
  replaceStatus<T extends KubeObject>(resource: CapiResource<T>, obj: T): Promise<T>
  /** Secret data decoded; undefined when absent. */
  getSecret(namespace: string, name: string): Promise<KubeObject | undefined>
  /** Rejects with KubeApiError 409 when it exists. `data` values are plain text. */
  createSecret(secret: KubeObject): Promise<void>
  /** Replaces `data` (plain text values) of the Secret read at `resourceVersion`. */
  replaceSecretData(secret: KubeObject, data: Record<string, string>): Promise<void>
  getConfigMap(namespace: string, name: string): Promise<KubeObject | undefined>
  /** Rejects with KubeApiError 409 when it exists. */
  createConfigMap(configMap: KubeObject): Promise<void>
  /** NotFound counts as deleted. */
  deleteConfigMap(namespace: string, name: string): Promise<void>
  /**
   * Calls `onEvent` for every change of the resource in any namespace until the returned stop
   * function is called; `onEnd` when the stream ends by itself (the caller watches again).
   */
  watch(resource: ResourceRef, onEvent: () => void, onEnd: (err?: unknown) => void): Promise<() => void>
}

export async function openCapiApi(
  source: KubeconfigSource,
  opts: { requestTimeoutMs?: number } = {},
): Promise<CapiApi> {
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const kube = await openClusterClient(source, { requestTimeoutMs: timeoutMs })
  const call = requestCaller(kube.server, timeoutMs)
  const secretName = (s: KubeObject) => `${s.metadata.namespace ?? 'default'}/${s.metadata.name}`
  return {
    async list<T extends KubeObject>(r: CapiResource<T>) {
      const list = (await call(`listing ${r.plural}.${r.group}`, () => kube.listCustomObjects(r))) as {
        items?: T[]
      }
      return list.items ?? []
    },
    async get<T extends KubeObject>(r: CapiResource<T>, namespace: string, name: string) {
      return (await call(
        `reading ${r.plural}.${r.group} ${namespace}/${name}`,
        () => kube.getCustomObject(r, namespace, name),
        true,
      )) as T | undefined
    },
    async replaceStatus<T extends KubeObject>(r: CapiResource<T>, obj: T) {
      const { namespace = 'default', name } = obj.metadata
      return (await call(`writing the status of ${r.plural}.${r.group} ${namespace}/${name}`, () =>
        kube.replaceCustomObjectStatus(r, obj),
      )) as T
    },
    getSecret: (namespace, name) =>
      call(`reading Secret ${namespace}/${name}`, () => kube.readSecret(namespace, name), true),
    async createSecret(secret) {
      await call(`creating Secret ${secretName(secret)}`, () => kube.createSecret(secret))
    },
    async replaceSecretData(secret, data) {
      await call(`replacing Secret ${secretName(secret)}`, () => kube.replaceSecret({ ...secret, data }))
    },
    getConfigMap: (namespace, name) =>
      call(`reading ConfigMap ${namespace}/${name}`, () => kube.readConfigMap(namespace, name), true),
    async createConfigMap(cm) {
      const namespace = cm.metadata.namespace ?? 'default'
      await call(`creating ConfigMap ${namespace}/${cm.metadata.name}`, () => kube.createConfigMap(cm))
    },
    async deleteConfigMap(namespace, name) {
      await call(`deleting ConfigMap ${namespace}/${name}`, () => kube.deleteConfigMap(namespace, name), true)
    },
    watch: (r, onEvent, onEnd) => kube.watch(r, onEvent, onEnd),
  }
}
