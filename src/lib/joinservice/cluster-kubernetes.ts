/**
 * The Kubernetes version and components a joining node gets: what the cluster runs now, read from
 * the cluster at each ticket, so a node that joins (or a new node after an upgrade) runs the version
 * the control plane is at. The version is kubeadm's record, kube-system/kubeadm-config's
 * ClusterConfiguration.kubernetesVersion, which `kubeadm upgrade apply` moves with the control plane.
 * The components of that version are the cluster's record of them, the ConfigMap
 * kube-system/constellation-components-<version> (written by the upgrade before any node moves),
 * else this control plane's own file (what init or its join installed, and its upgrade step rewrote).
 */
import { messageOf } from '../errors/index.js'
import type { KubeApi } from '../kube/index.js'
import { COMPONENTS_NAMESPACE, componentsConfigMapName, readClusterVersion } from '../nodeupgrade/index.js'
import { parseComponents, type KubernetesComponent } from '../versions/index.js'

export interface ClusterKubernetes {
  /** `vX.Y.Z`. */
  version: string
  components: KubernetesComponent[]
}

export interface ClusterKubernetesDeps {
  api: Pick<KubeApi, 'getConfigMap'>
  /** This control plane's components file (versions/readComponentsFile). */
  localComponents: () => Promise<KubernetesComponent[]>
}

export function clusterKubernetesSource(deps: ClusterKubernetesDeps): () => Promise<ClusterKubernetes> {
  return async () => {
    const version = await readClusterVersion(deps.api)
    const name = componentsConfigMapName(version)
    const recorded = await deps.api.getConfigMap(COMPONENTS_NAMESPACE, name).catch((cause: unknown) => {
      throw new Error(`reading ConfigMap ${COMPONENTS_NAMESPACE}/${name}: ${messageOf(cause)}`, { cause })
    })
    const text = recorded?.data.components
    const components =
      text === undefined
        ? await deps.localComponents()
        : parseComponents(text, `ConfigMap ${COMPONENTS_NAMESPACE}/${name}, key components`)
    return { version, components }
  }
}
