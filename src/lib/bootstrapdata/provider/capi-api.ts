/**
 * What the bootstrap provider reads and writes in the management cluster, over @kubernetes/client-node
 * (loaded on first use): Cluster API objects by group/version/plural, the data Secrets, the init-lock
 * ConfigMaps, and watches. Every request is bounded; an error names the request and its HTTP status,
 * never a response body (a Secret could be echoed back).
 */
import type * as ClientNode from '@kubernetes/client-node'
import { CliError } from '../../errors/index.js'
import {
  API_REQUEST_TIMEOUT_MS,
  loadClientNode,
  requestCaller,
  type OwnerReference,
} from '../../kube/index.js'

export type { OwnerReference }

export interface CapiObject {
  apiVersion: string
  kind: string
  metadata: {
    name: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    generation?: number
    labels?: Record<string, string>
    annotations?: Record<string, string>
    ownerReferences?: OwnerReference[]
  }
  spec?: Record<string, unknown>
  status?: Record<string, unknown>
  /** Secrets and ConfigMaps. */
  data?: Record<string, string>
  type?: string
}

/** One resource of a CAPI group at the version the provider speaks. */
export interface ResourceRef {
  group: string
  version: string
  plural: string
}

export interface CapiApi {
  list(resource: ResourceRef): Promise<CapiObject[]>
  get(resource: ResourceRef, namespace: string, name: string): Promise<CapiObject | undefined>
  /** Writes `status` only; 409 when the object changed since it was read. */
  replaceStatus(resource: ResourceRef, obj: CapiObject): Promise<CapiObject>
  /** Secret data decoded; undefined when absent. */
  getSecret(namespace: string, name: string): Promise<CapiObject | undefined>
  /** Rejects with KubeApiError 409 when it exists. `data` values are plain text. */
  createSecret(secret: CapiObject): Promise<void>
  /** Replaces `data` (plain text values) of the Secret read at `resourceVersion`. */
  replaceSecretData(secret: CapiObject, data: Record<string, string>): Promise<void>
  getConfigMap(namespace: string, name: string): Promise<CapiObject | undefined>
  /** Rejects with KubeApiError 409 when it exists. */
  createConfigMap(configMap: CapiObject): Promise<void>
  /** NotFound counts as deleted. */
  deleteConfigMap(namespace: string, name: string): Promise<void>
  /**
   * Calls `onEvent` for every change of the resource in any namespace until the returned stop
   * function is called; `onEnd` when the stream ends by itself (the caller watches again).
   */
  watch(resource: ResourceRef, onEvent: () => void, onEnd: (err?: unknown) => void): Promise<() => void>
}

type Library = typeof ClientNode

const secretBody = (secret: CapiObject, data: Record<string, string> | undefined): ClientNode.V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: secret.metadata,
  type: secret.type,
  data: encoded(data),
})

/** The library's parse error quotes the text, which holds credentials: only the source is named. */
function kubeconfigFromText(k8s: Library, source: { text: string; what: string }): ClientNode.KubeConfig {
  const kc = new k8s.KubeConfig()
  try {
    kc.loadFromString(source.text)
  } catch {
    throw new CliError(`${source.what} is not a kubeconfig`)
  }
  return kc
}

const b64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64')
const unb64 = (v: string): string => Buffer.from(v, 'base64').toString('utf8')
const decoded = (data: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, unb64(v)]))
const encoded = (data: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, b64(v)]))

/** A kubeconfig file (the operator's), or the text of one from a Secret (a workload cluster's). */
export type KubeconfigSource = { file: string } | { text: string; what: string }

export async function openCapiApi(
  source: KubeconfigSource,
  opts: { requestTimeoutMs?: number } = {},
): Promise<CapiApi> {
  const k8s: Library = await import('@kubernetes/client-node')
  const helpers = await loadClientNode()
  const kc = 'file' in source ? helpers.readKubeconfig(source.file) : kubeconfigFromText(k8s, source)
  const kubeconfigPath = 'file' in source ? source.file : source.what
  const custom = kc.makeApiClient(k8s.CustomObjectsApi)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const server = kc.getCurrentCluster()?.server ?? kubeconfigPath
  const bound = () => helpers.requestTimeout(timeoutMs)

  const call = requestCaller(server, timeoutMs)
  const fromSecret = (s: ClientNode.V1Secret): CapiObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: s.metadata as CapiObject['metadata'],
    type: s.type,
    data: decoded(s.data),
  })

  return {
    async list(r) {
      const list = (await call(`listing ${r.plural}.${r.group}`, () =>
        custom.listClusterCustomObject({ group: r.group, version: r.version, plural: r.plural }, bound()),
      )) as { items?: CapiObject[] }
      return list.items ?? []
    },
    async get(r, namespace, name) {
      return (await call(
        `reading ${r.plural}.${r.group} ${namespace}/${name}`,
        () =>
          custom.getNamespacedCustomObject(
            { group: r.group, version: r.version, plural: r.plural, namespace, name },
            bound(),
          ),
        true,
      )) as CapiObject | undefined
    },
    async replaceStatus(r, obj) {
      const { namespace = 'default', name } = obj.metadata
      return (await call(`writing the status of ${r.plural}.${r.group} ${namespace}/${name}`, () =>
        custom.replaceNamespacedCustomObjectStatus(
          { group: r.group, version: r.version, plural: r.plural, namespace, name, body: obj },
          bound(),
        ),
      )) as CapiObject
    },
    async getSecret(namespace, name) {
      const s = await call(
        `reading Secret ${namespace}/${name}`,
        () => core.readNamespacedSecret({ namespace, name }, bound()),
        true,
      )
      return s && fromSecret(s)
    },
    async createSecret(secret) {
      const namespace = secret.metadata.namespace ?? 'default'
      const body = secretBody(secret, secret.data)
      await call(`creating Secret ${namespace}/${secret.metadata.name}`, () =>
        core.createNamespacedSecret({ namespace, body }, bound()),
      )
    },
    async replaceSecretData(secret, data) {
      const namespace = secret.metadata.namespace ?? 'default'
      const body = secretBody(secret, data)
      await call(`replacing Secret ${namespace}/${secret.metadata.name}`, () =>
        core.replaceNamespacedSecret({ namespace, name: secret.metadata.name, body }, bound()),
      )
    },
    async getConfigMap(namespace, name) {
      const cm = await call(
        `reading ConfigMap ${namespace}/${name}`,
        () => core.readNamespacedConfigMap({ namespace, name }, bound()),
        true,
      )
      return (
        cm && {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: cm.metadata as CapiObject['metadata'],
          data: cm.data,
        }
      )
    },
    async createConfigMap(cm) {
      const namespace = cm.metadata.namespace ?? 'default'
      await call(`creating ConfigMap ${namespace}/${cm.metadata.name}`, () =>
        core.createNamespacedConfigMap(
          { namespace, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: cm.metadata, data: cm.data } },
          bound(),
        ),
      )
    },
    async deleteConfigMap(namespace, name) {
      await call(
        `deleting ConfigMap ${namespace}/${name}`,
        () => core.deleteNamespacedConfigMap({ namespace, name }, bound()),
        true,
      )
    },
    async watch(r, onEvent, onEnd) {
      const watcher = new k8s.Watch(kc)
      let stopped = false
      const controller = await watcher.watch(
        `/apis/${r.group}/${r.version}/${r.plural}`,
        { allowWatchBookmarks: true },
        (phase) => {
          if (phase !== 'BOOKMARK') onEvent()
        },
        (err: unknown) => {
          if (!stopped) onEnd(err)
        },
      )
      return () => {
        stopped = true
        controller.abort()
      }
    },
  }
}
