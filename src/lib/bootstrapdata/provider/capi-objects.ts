/**
 * The Cluster API objects the bootstrap provider reads and writes (capi.md §6), typed in the fields
 * it uses; the rest of each spec and status is kept as the API server sent it, so that a status
 * written back loses nothing.
 */
import type { KubeObject, ResourceRef } from '../../kube/index.js'

/** cluster.x-k8s.io Cluster. */
export interface CapiCluster extends KubeObject {
  spec?: { paused?: boolean; controlPlaneEndpoint?: { host?: string; port?: number } } & Record<
    string,
    unknown
  >
}

/** cluster.x-k8s.io Machine. */
export interface CapiMachine extends KubeObject {
  spec?: { clusterName?: string } & Record<string, unknown>
  /** Set once the machine's node has joined. */
  status?: { nodeRef?: Record<string, unknown> } & Record<string, unknown>
}

/** bootstrap.cluster.x-k8s.io KubeadmConfig; its spec is checked by parseBootstrapObjects. */
export interface KubeadmConfigObject extends KubeObject {
  status?: { dataSecretName?: string; conditions?: unknown[] } & Record<string, unknown>
}

/** A resource whose objects are of type T (T is carried for the compiler only). */
export interface CapiResource<T extends KubeObject> extends ResourceRef {
  readonly objectType?: T
}
