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
import {
  isPatchRelease,
  parseComponents,
  parseKubernetesVersion,
  type KubernetesComponent,
} from '../versions/index.js'
import { parseYaml } from '../yaml/index.js'

export interface ClusterKubernetes {
  /** `vX.Y.Z`. */
  version: string
  components: KubernetesComponent[]
}

export const KUBEADM_CONFIG = { namespace: 'kube-system', name: 'kubeadm-config' } as const
/** The cluster's record of a version's components; `components` holds them as versions/components-file.ts encodes them. */
export const componentsConfigMapName = (version: string) => `constellation-components-${version}`

export interface ClusterKubernetesDeps {
  api: Pick<KubeApi, 'getConfigMap'>
  /** This control plane's components file (versions/readComponentsFile). */
  localComponents: () => Promise<KubernetesComponent[]>
}

export function clusterKubernetesSource(deps: ClusterKubernetesDeps): () => Promise<ClusterKubernetes> {
  return async () => {
    const version = await recordedVersion(deps.api)
    const name = componentsConfigMapName(version)
    const recorded = await deps.api.getConfigMap(KUBEADM_CONFIG.namespace, name).catch((cause: unknown) => {
      throw new Error(`reading ConfigMap ${KUBEADM_CONFIG.namespace}/${name}: ${messageOf(cause)}`, { cause })
    })
    const text = recorded?.data.components
    const components =
      text === undefined
        ? await deps.localComponents()
        : parseComponents(text, `ConfigMap ${KUBEADM_CONFIG.namespace}/${name}, key components`)
    return { version, components }
  }
}

async function recordedVersion(api: Pick<KubeApi, 'getConfigMap'>): Promise<string> {
  const where = `ConfigMap ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}`
  const cm = await api.getConfigMap(KUBEADM_CONFIG.namespace, KUBEADM_CONFIG.name).catch((cause: unknown) => {
    throw new Error(`reading ${where}: ${messageOf(cause)}`, { cause })
  })
  const text = cm?.data.ClusterConfiguration
  if (text === undefined) throw new Error(`${where} has no ClusterConfiguration (kubeadm init uploads it)`)
  let version: unknown
  try {
    const doc = parseYaml(text, `${where}, key ClusterConfiguration`).value
    version =
      typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>).kubernetesVersion : undefined
  } catch (cause) {
    throw new Error(`${where}: ClusterConfiguration is not YAML: ${messageOf(cause)}`, { cause })
  }
  if (
    typeof version !== 'string' ||
    !version.startsWith('v') ||
    !isPatchRelease(parseKubernetesVersion(version))
  )
    throw new Error(
      `${where}: ClusterConfiguration.kubernetesVersion ${JSON.stringify(version)} is not a version like v1.32.9`,
    )
  return version
}
