/**
 * The few Kubernetes API calls a control plane's services and the operator's commands make:
 * Secrets (bootstrap tokens), ConfigMaps (the join-config), Nodes, and the Lease that serializes
 * control-plane joins. Every request is bounded; an error names the request and its HTTP status,
 * never the response body, which can echo a Secret back.
 */
import { openClientNodeKubeApi } from './client-node.js'

export interface KubeObjectMeta {
  name: string
  namespace: string
}

export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

export interface SecretObject {
  apiVersion: 'v1'
  kind: 'Secret'
  metadata: KubeObjectMeta & { labels?: Record<string, string>; ownerReferences?: OwnerReference[] }
  type: string
  /** Plain values; the API server stores them base64 under `data`. */
  stringData: Record<string, string>
}

export interface ConfigMapData {
  data: Record<string, string>
  resourceVersion: string
}

/** A ConfigMap as a list returns it. */
export interface NamedConfigMap extends ConfigMapData {
  name: string
  labels: Record<string, string>
}

export interface Lease {
  holder?: string
  /** When the holder took or last renewed it. */
  renewed?: Date
  durationSeconds?: number
  resourceVersion: string
}

export interface LeaseSpec {
  holder: string
  renewed: Date
  durationSeconds: number
}

export interface KubeApi {
  /** Rejects with KubeApiError status 409 when a Secret of that name exists. */
  createSecret(secret: SecretObject): Promise<void>
  /** The Secret's data, decoded (UTF-8); undefined when there is no such Secret. */
  getSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>
  getConfigMap(namespace: string, name: string): Promise<ConfigMapData | undefined>
  /** Creates the ConfigMap, or replaces the data of the one there. */
  applyConfigMap(namespace: string, name: string, data: Record<string, string>): Promise<void>
  /** Creates it only: rejects with KubeApiError status 409 when a ConfigMap of that name exists. */
  createConfigMap(
    namespace: string,
    name: string,
    data: Record<string, string>,
    labels?: Record<string, string>,
  ): Promise<void>
  /** The ConfigMaps whose labels match `labelSelector` (`key=value,…`). */
  listConfigMaps(namespace: string, labelSelector: string): Promise<NamedConfigMap[]>
  /** Deletes it; absent already is no error. */
  deleteConfigMap(namespace: string, name: string): Promise<void>
  /** Whether a Node of that name is registered. */
  hasNode(name: string): Promise<boolean>
  getLease(namespace: string, name: string): Promise<Lease | undefined>
  /** Rejects with status 409 when it exists already. */
  createLease(namespace: string, name: string, spec: LeaseSpec): Promise<void>
  /** Rejects with status 409 when the Lease changed since `resourceVersion` was read. */
  replaceLease(namespace: string, name: string, spec: LeaseSpec, resourceVersion: string): Promise<void>
}

export interface KubeApiOptions {
  requestTimeoutMs?: number
}

/**
 * The client-node KubeApi, for the operator's kubeconfigs (any auth the library supports). The
 * library is loaded on first use: it costs about 80 MB resident, which a node's services avoid
 * (openNodeKubeApi).
 */
export async function openKubeApi(kubeconfigPath: string, opts: KubeApiOptions = {}): Promise<KubeApi> {
  return openClientNodeKubeApi(kubeconfigPath, opts)
}
