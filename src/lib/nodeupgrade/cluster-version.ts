/**
 * The cluster's own record of its Kubernetes version and that version's components, which the
 * upgrade moves and the join service hands out. The version is kubeadm's, kube-system/kubeadm-config's
 * ClusterConfiguration.kubernetesVersion (`kubeadm upgrade apply` moves it with the control plane);
 * the components are ConfigMap kube-system/constellation-components-<version>, key `components`
 * (versions/components-file.ts encodes them), written by the upgrade before any node moves.
 */
import { messageOf } from '../errors/index.js'
import type { KubeApi } from '../kube/index.js'
import { isPatchRelease, parseKubernetesVersion } from '../versions/index.js'
import { parseYaml } from '../yaml/index.js'

const KUBEADM_CONFIG = { namespace: 'kube-system', name: 'kubeadm-config' } as const
export const COMPONENTS_NAMESPACE = 'kube-system'
export const componentsConfigMapName = (version: string) => `constellation-components-${version}`

/** kubeadm-config's ClusterConfiguration.kubernetesVersion; every failure names the ConfigMap. */
export async function readClusterVersion(api: Pick<KubeApi, 'getConfigMap'>): Promise<string> {
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
