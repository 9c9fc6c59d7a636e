/**
 * What the cluster says about itself, so that an upgrade needs no workspace config: the Kubernetes
 * version from the API server, the service network and API endpoint from the ClusterConfiguration
 * kubeadm stores in kube-system/kubeadm-config, and whether kube-proxy runs (kubeadm's addon). The workspace (config, state) fills what the
 * cluster does not say; a fact nobody knows is left out, and the installed values keep it.
 */
import type { ClusterConfig, ClusterState } from '../../config/index.js'
import { CliError, messageOf } from '../../errors/index.js'
import { parseHostPort } from '../../system/index.js'
import { parseYaml } from '../../yaml/index.js'
import type { ClusterFacts } from './releases.js'

export const KUBEADM_CONFIG = {
  namespace: 'kube-system',
  name: 'kubeadm-config',
  key: 'ClusterConfiguration',
}

export interface ClusterDescription {
  /** The API server's version, e.g. v1.31.13: it picks the pinned release set. */
  kubernetesVersion: string
  facts: ClusterFacts
}

export async function describeCluster(
  reader: {
    /** The API server's gitVersion. */
    serverVersion(): Promise<string>
    configMapData(namespace: string, name: string): Promise<Record<string, string> | undefined>
  },
  workspace: WorkspaceFacts,
): Promise<ClusterDescription> {
  const kubernetesVersion = await reader.serverVersion()
  const { namespace, name, key } = KUBEADM_CONFIG
  const data = await reader.configMapData(namespace, name)
  if (!data?.[key]) return { kubernetesVersion, facts: factsFromWorkspace(workspace) }
  const kubeadm = readClusterConfiguration(data[key])
  // kubeadm's kube-proxy addon leaves its ConfigMap; without it Cilium must replace kube-proxy
  const kubeProxy = await reader.configMapData(KUBE_PROXY.namespace, KUBE_PROXY.name)
  return {
    kubernetesVersion,
    facts: { ...factsFromWorkspace(workspace, kubeadm), kubeProxyReplacement: kubeProxy === undefined },
  }
}

const KUBE_PROXY = { namespace: 'kube-system', name: 'kube-proxy' }

export interface WorkspaceFacts {
  config?: Pick<ClusterConfig, 'serviceCIDR'>
  state?: ClusterState
}

/** The facts from the workspace (config, state), over what kubeadm stored in the cluster. */
export function factsFromWorkspace(workspace: WorkspaceFacts, kubeadm: KubeadmFacts = {}): ClusterFacts {
  const endpoint =
    workspace.state?.infrastructure.inClusterEndpoint ||
    workspace.state?.infrastructure.clusterEndpoint ||
    kubeadm.controlPlaneEndpoint
  const apiServerHost = endpoint ? parseHostPort(endpoint).host || undefined : undefined
  const serviceCIDR = kubeadm.serviceSubnet ?? workspace.config?.serviceCIDR
  return { serviceCIDR, apiServerHost }
}

interface KubeadmFacts {
  serviceSubnet?: string
  controlPlaneEndpoint?: string
}

/** The two fields of kubeadm's ClusterConfiguration the chart values need. */
function readClusterConfiguration(text: string): KubeadmFacts {
  const where = `ConfigMap ${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name}, key ${KUBEADM_CONFIG.key}`
  let value: unknown
  try {
    value = parseYaml(text, where).value
  } catch (err) {
    throw new CliError(`reading the cluster's configuration: ${messageOf(err)}`)
  }
  const doc = (typeof value === 'object' && value !== null ? value : {}) as {
    controlPlaneEndpoint?: unknown
    networking?: { serviceSubnet?: unknown }
  }
  // dual-stack clusters list two subnets; cluster DNS lives in the first (kubeadm's rule)
  const subnet = doc.networking?.serviceSubnet
  const serviceSubnet = typeof subnet === 'string' && subnet ? subnet.split(',')[0]?.trim() : undefined
  const endpoint = doc.controlPlaneEndpoint
  return {
    serviceSubnet,
    controlPlaneEndpoint: typeof endpoint === 'string' && endpoint ? endpoint : undefined,
  }
}
