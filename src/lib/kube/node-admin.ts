/**
 * The requests that retire or upgrade a node, over @kubernetes/client-node with the operator's kubeconfig:
 * cordon, the pods on it, evictions (the eviction subresource, which honours PodDisruptionBudgets),
 * and deleting the Node and the objects that name it. Every request is bounded and names itself
 * and the server when it fails (requestCaller); an eviction the API refuses for a disruption budget
 * (HTTP 429) is an answer, not an error.
 */
import { clientNodeLibrary, openClientNodeKubeApi, readKubeconfig, requestTimeout } from './client-node.js'
import { API_REQUEST_TIMEOUT_MS, requestCaller, statusOf } from './client.js'

/** The part of a Node that removing it looks at. */
export interface AdminNode {
  name: string
  labels: Record<string, string>
  annotations: Record<string, string>
  internalIP?: string
  unschedulable: boolean
  /** Its Ready condition is True. */
  ready: boolean
  /** What its kubelet reports (status.nodeInfo.kubeletVersion). */
  kubeletVersion?: string
}

/** A pod bound to a node. */
export interface NodePod {
  namespace: string
  name: string
  uid: string
  /** The kind of its controller (ReplicaSet, DaemonSet, …), if it has one. */
  controllerKind?: string
  /** A static pod's mirror: the kubelet owns it, the API cannot evict it. */
  mirror: boolean
  /** Succeeded or Failed: nothing runs any more. */
  finished: boolean
}

/** What the eviction subresource answered. */
export type EvictionAnswer = { outcome: 'evicted' | 'gone' } | { outcome: 'blocked'; reason: string }

/** Names of objects (ConfigMaps, Secrets) in one namespace, with the labels and text data a filter needs. */
export interface NamedObject {
  name: string
  labels: Record<string, string>
  /** ConfigMaps only: their data. Secrets' data is never read into this. */
  data: Record<string, string>
}

export interface NodeAdmin {
  readonly server: string
  getNode(name: string): Promise<AdminNode | undefined>
  listNodes(): Promise<AdminNode[]>
  /** Marks the Node unschedulable (kubectl cordon). */
  cordon(name: string): Promise<void>
  /** Makes the Node schedulable again (kubectl uncordon). */
  uncordon(name: string): Promise<void>
  /** Sets one annotation on the Node. */
  annotateNode(name: string, key: string, value: string): Promise<void>
  podsOn(node: string): Promise<NodePod[]>
  evict(namespace: string, name: string): Promise<EvictionAnswer>
  /** Whether the pod with this uid is still there (a pod of the same name and another uid is a new one). */
  podExists(namespace: string, name: string, uid: string): Promise<boolean>
  deleteNode(name: string): Promise<void>
  listConfigMaps(namespace: string, labelSelector: string): Promise<NamedObject[]>
  deleteConfigMap(namespace: string, name: string): Promise<void>
  /** Secret names and labels only. */
  listSecrets(namespace: string, labelSelector: string): Promise<NamedObject[]>
  deleteSecret(namespace: string, name: string): Promise<void>
}

/** JSON Pointer escaping of one key (RFC 6901), for annotation keys with '/'. */
const pointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1')

/** The Status message of an ApiException's body, when it has one (a pod's eviction refusal names the budget). */
function statusMessage(err: unknown): string | undefined {
  const body = typeof err === 'object' && err !== null && 'body' in err ? err.body : undefined
  try {
    const parsed: unknown = typeof body === 'string' ? JSON.parse(body) : body
    if (typeof parsed === 'object' && parsed !== null && 'message' in parsed)
      return typeof parsed.message === 'string' ? parsed.message : undefined
  } catch {
    return undefined
  }
  return undefined
}

export async function openNodeAdmin(
  kubeconfigPath: string,
  opts: { requestTimeoutMs?: number } = {},
): Promise<NodeAdmin> {
  const k8s = await clientNodeLibrary()
  const kc = readKubeconfig(k8s, kubeconfigPath)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const server = kc.getCurrentCluster()?.server ?? kubeconfigPath
  const options = () => requestTimeout(k8s, timeoutMs)
  const call = requestCaller(server, timeoutMs, kubeconfigPath)
  const configMaps = await openClientNodeKubeApi(kubeconfigPath, opts)
  type RawNode = Awaited<ReturnType<typeof core.readNode>>
  const asNode = (n: RawNode): AdminNode => ({
    name: n.metadata?.name ?? '',
    labels: n.metadata?.labels ?? {},
    annotations: n.metadata?.annotations ?? {},
    internalIP: n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address,
    unschedulable: n.spec?.unschedulable === true,
    ready: n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    kubeletVersion: n.status?.nodeInfo?.kubeletVersion,
  })
  const admin: NodeAdmin = {
    server,
    async getNode(name) {
      const node = await call(`reading Node ${name}`, () => core.readNode({ name }, options()), true)
      return node && asNode(node)
    },
    async listNodes() {
      const list = await call('listing Nodes', () => core.listNode({}, options()))
      return (list?.items ?? []).map(asNode)
    },
    async cordon(name) {
      const body = [{ op: 'add', path: '/spec/unschedulable', value: true }]
      await call(`cordoning Node ${name}`, () => core.patchNode({ name, body }, options()))
    },
    async uncordon(name) {
      const body = [{ op: 'add', path: '/spec/unschedulable', value: false }]
      await call(`uncordoning Node ${name}`, () => core.patchNode({ name, body }, options()))
    },
    async annotateNode(name, key, value) {
      const node = await admin.getNode(name)
      const body =
        node && Object.keys(node.annotations).length > 0
          ? [{ op: 'add', path: `/metadata/annotations/${pointer(key)}`, value }]
          : [{ op: 'add', path: '/metadata/annotations', value: { [key]: value } }]
      await call(`annotating Node ${name}`, () => core.patchNode({ name, body }, options()))
    },
    async podsOn(node) {
      const list = await call(`listing the pods on Node ${node}`, () =>
        core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }, options()),
      )
      return (list?.items ?? []).map((p) => ({
        namespace: p.metadata?.namespace ?? 'default',
        name: p.metadata?.name ?? '',
        uid: p.metadata?.uid ?? '',
        controllerKind: p.metadata?.ownerReferences?.find((r) => r.controller)?.kind,
        mirror: p.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined,
        finished: p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed',
      }))
    },
    async evict(namespace, name) {
      const body = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } }
      try {
        await core.createNamespacedPodEviction({ namespace, name, body }, options())
        return { outcome: 'evicted' }
      } catch (err) {
        const status = statusOf(err)
        if (status === 404) return { outcome: 'gone' }
        if (status === 429)
          return { outcome: 'blocked', reason: statusMessage(err) ?? 'refused by a disruption budget' }
        // anything else is a failure, said as every request's failure is
        await call(`evicting pod ${namespace}/${name}`, () => Promise.reject(err))
        throw err
      }
    },
    async podExists(namespace, name, uid) {
      const pod = await call(
        `reading pod ${namespace}/${name}`,
        () => core.readNamespacedPod({ namespace, name }, options()),
        true,
      )
      return pod !== undefined && pod.metadata?.uid === uid
    },
    async deleteNode(name) {
      await call(`deleting Node ${name}`, () => core.deleteNode({ name }, options()), true)
    },
    // the same requests as the services' KubeApi: one implementation of each
    listConfigMaps: (namespace, labelSelector) => configMaps.listConfigMaps(namespace, labelSelector),
    deleteConfigMap: (namespace, name) => configMaps.deleteConfigMap(namespace, name),
    async listSecrets(namespace, labelSelector) {
      const list = await call(`listing Secrets ${namespace} (${labelSelector})`, () =>
        core.listNamespacedSecret({ namespace, labelSelector }, options()),
      )
      return (list?.items ?? []).map((s) => ({
        name: s.metadata?.name ?? '',
        labels: s.metadata?.labels ?? {},
        data: {},
      }))
    },
    async deleteSecret(namespace, name) {
      await call(
        `deleting Secret ${namespace}/${name}`,
        () => core.deleteNamespacedSecret({ namespace, name }, options()),
        true,
      )
    },
  }
  return admin
}
