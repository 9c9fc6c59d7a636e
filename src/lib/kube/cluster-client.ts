/**
 * The Kubernetes API over @kubernetes/client-node for the operator's flows (status, upgrade, the
 * bootstrap provider): the reads and writes they make, each bounded in time. A request rejects with
 * the library's own error (HTTP status in `code`, an AbortError at the bound) so that each flow keeps
 * its own way of saying what failed (requestCaller, or retries); no flow sees the library itself.
 */
import type { V1Secret } from '@kubernetes/client-node'
import { CliError } from '../errors/index.js'
import { API_REQUEST_TIMEOUT_MS } from './client.js'
import { clientNodeLibrary, readKubeconfig, requestTimeout, type Library } from './client-node.js'
import type { KubeconfigSource, KubeNode, KubeObject, ObjectMeta, ResourceRef } from './objects.js'

export interface ClusterClient {
  /** The API server's URL (the kubeconfig's name when it names none), for messages. */
  readonly server: string
  /** The API server's gitVersion, e.g. v1.31.13. */
  serverVersion(): Promise<string | undefined>
  listNodes(): Promise<KubeNode[]>
  readConfigMap(namespace: string, name: string): Promise<KubeObject>
  createConfigMap(configMap: KubeObject): Promise<void>
  deleteConfigMap(namespace: string, name: string): Promise<void>
  /** Its data decoded to text. */
  readSecret(namespace: string, name: string): Promise<KubeObject>
  /** `data` values are plain text. */
  createSecret(secret: KubeObject): Promise<void>
  /** Replaces the Secret read at `metadata.resourceVersion`; `data` values are plain text. */
  replaceSecret(secret: KubeObject): Promise<void>
  /** One page of a cluster-wide list (all of it without `limit`), as the server sent it. */
  listCustomObjects(
    resource: ResourceRef,
    page?: { limit?: number; continueToken?: string },
  ): Promise<unknown>
  getCustomObject(resource: ResourceRef, namespace: string, name: string): Promise<unknown>
  /** Writes `status` only. */
  replaceCustomObjectStatus(resource: ResourceRef, obj: KubeObject): Promise<unknown>
  /**
   * Calls `onEvent` for every change of the resource in any namespace until the returned stop
   * function is called; `onEnd` when the stream ends by itself (the caller watches again).
   */
  watch(resource: ResourceRef, onEvent: () => void, onEnd: (err?: unknown) => void): Promise<() => void>
}

export interface ClusterClientOptions {
  requestTimeoutMs?: number
}

/** The library's parse error quotes the text, which holds credentials: only the source is named. */
function kubeconfigFromText(k8s: Library, source: { text: string; what: string }) {
  const kc = new k8s.KubeConfig()
  try {
    kc.loadFromString(source.text)
  } catch {
    throw new CliError(`${source.what} is not a kubeconfig`)
  }
  return kc
}

const recode = (data: Record<string, string> | undefined, from: BufferEncoding, to: BufferEncoding) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, from).toString(to)]))

const secretBody = (secret: KubeObject): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: secret.metadata,
  type: secret.type,
  data: recode(secret.data, 'utf8', 'base64'),
})

export async function openClusterClient(
  source: KubeconfigSource,
  opts: ClusterClientOptions = {},
): Promise<ClusterClient> {
  const k8s = await clientNodeLibrary()
  const kc = 'file' in source ? readKubeconfig(k8s, source.file) : kubeconfigFromText(k8s, source)
  const where = 'file' in source ? source.file : source.what
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const custom = kc.makeApiClient(k8s.CustomObjectsApi)
  const version = kc.makeApiClient(k8s.VersionApi)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const bound = () => requestTimeout(k8s, timeoutMs)
  const meta = (m: { name?: string } | undefined): ObjectMeta => ({ ...m, name: m?.name ?? '' })
  return {
    server: kc.getCurrentCluster()?.server ?? where,
    serverVersion: async () => (await version.getCode(bound())).gitVersion,
    listNodes: async () => (await core.listNode({}, bound())).items,
    async readConfigMap(namespace, name) {
      const cm = await core.readNamespacedConfigMap({ namespace, name }, bound())
      return { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(cm.metadata), data: cm.data }
    },
    async createConfigMap(cm) {
      const namespace = cm.metadata.namespace ?? 'default'
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: cm.metadata, data: cm.data }
      await core.createNamespacedConfigMap({ namespace, body }, bound())
    },
    async deleteConfigMap(namespace, name) {
      await core.deleteNamespacedConfigMap({ namespace, name }, bound())
    },
    async readSecret(namespace, name) {
      const s = await core.readNamespacedSecret({ namespace, name }, bound())
      const data = recode(s.data, 'base64', 'utf8')
      return { apiVersion: 'v1', kind: 'Secret', metadata: meta(s.metadata), type: s.type, data }
    },
    async createSecret(secret) {
      const namespace = secret.metadata.namespace ?? 'default'
      await core.createNamespacedSecret({ namespace, body: secretBody(secret) }, bound())
    },
    async replaceSecret(secret) {
      const { namespace = 'default', name } = secret.metadata
      await core.replaceNamespacedSecret({ namespace, name, body: secretBody(secret) }, bound())
    },
    listCustomObjects: (r, page = {}) =>
      custom.listClusterCustomObject(
        { ...r, ...(page.limit === undefined ? {} : { limit: page.limit, _continue: page.continueToken }) },
        bound(),
      ),
    getCustomObject: (r, namespace, name) =>
      custom.getNamespacedCustomObject({ ...r, namespace, name }, bound()),
    replaceCustomObjectStatus: (r, obj) =>
      custom.replaceNamespacedCustomObjectStatus(
        { ...r, namespace: obj.metadata.namespace ?? 'default', name: obj.metadata.name, body: obj },
        bound(),
      ),
    async watch(r, onEvent, onEnd) {
      let stopped = false
      const controller = await new k8s.Watch(kc).watch(
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
