/**
 * The kubeadm JoinConfiguration, shaped as Constellation's: bootstrap-token discovery pinned to the
 * cluster CA, the node's name and address, and for a control plane its API endpoint and no
 * download-certs phase (the CA files came with the ticket). The token lives in this file, never in
 * kubeadm's argv.
 */
import { stringifyYaml } from '../../yaml/index.js'
import { kubeadmApiVersion } from '../../versions/index.js'
import { API_SERVER_PORT } from '../../contract/index.js'
import { CRI_SOCKET } from './kubeadm-config.js'

export interface KubeadmJoinInput {
  nodeName: string
  nodeIP: string
  /** HOST:PORT of the API server to discover the cluster through. */
  apiServerEndpoint: string
  token: string
  /** `sha256:<hex>` pin of the cluster CA's public key. */
  caCertHash: string
  controlPlane: boolean
  /**
   * The version the join ticket says the cluster runs (empty from a join service that does not say):
   * an installed kubeadm of another minor is logged as a warning (the ticket's components are not that version's).
   */
  clusterVersion?: string
}

export interface KubeadmJoinConfigInput extends KubeadmJoinInput {
  /** The installed kubeadm's version: it decides the config API version. */
  kubernetesVersion: string
  paths: {
    /** Where kubeadm keeps the cluster CA certificate (under the node root). */
    caCertPath: string
    patchesDir: string
  }
}

/** The certificates came in the join ticket; kubeadm must not look for the kubeadm-certs Secret. */
export const CONTROL_PLANE_SKIPPED_JOIN_PHASES = ['control-plane-prepare/download-certs'] as const

export function renderKubeadmJoinConfig(input: KubeadmJoinConfigInput): string {
  const apiVersion = kubeadmApiVersion(input.kubernetesVersion)
  const v1beta4 = apiVersion.endsWith('v1beta4')
  const kubeletExtraArgs = v1beta4 ? [{ name: 'node-ip', value: input.nodeIP }] : { 'node-ip': input.nodeIP }
  const join = {
    apiVersion,
    kind: 'JoinConfiguration',
    caCertPath: input.paths.caCertPath,
    nodeRegistration: { name: input.nodeName, criSocket: CRI_SOCKET, kubeletExtraArgs },
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: input.apiServerEndpoint,
        token: input.token,
        caCertHashes: [input.caCertHash],
      },
    },
    patches: { directory: input.paths.patchesDir },
    ...(input.controlPlane
      ? {
          controlPlane: { localAPIEndpoint: { advertiseAddress: input.nodeIP, bindPort: API_SERVER_PORT } },
          skipPhases: [...CONTROL_PLANE_SKIPPED_JOIN_PHASES],
        }
      : {}),
  }
  return stringifyYaml(join)
}
