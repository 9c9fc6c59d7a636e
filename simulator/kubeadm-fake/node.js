/* global process */
/**
 * The Node object a kubelet registers once kubeadm started it. No kubelet runs here, so the
 * kubeadm contract fake writes it, with the status a healthy kubelet would report: the node's
 * address (its `node-ip` kubelet argument), the kubelet version, and Ready, whose message says the
 * kubelet is SIMULATED.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { parse } from 'yaml'

/** `node-ip` from kubeletExtraArgs: a map (v1beta3) or a list of {name, value} (v1beta4). */
function nodeIp(args) {
  if (Array.isArray(args)) return args.find((a) => a?.name === 'node-ip')?.value
  return args?.['node-ip']
}

/** The cluster's version as kubeadm init uploaded it (what a joining node's kubelet runs). */
export function uploadedKubernetesVersion(apiDir) {
  try {
    const cm = JSON.parse(
      readFileSync(path.join(apiDir, 'namespaces/kube-system/configmaps/kubeadm-config.json'), 'utf8'),
    )
    return parse(cm.data.ClusterConfiguration).kubernetesVersion
  } catch {
    return undefined
  }
}

export function registeredNode({ name, labels, nodeRegistration, kubernetesVersion }) {
  const ip = nodeIp(nodeRegistration?.kubeletExtraArgs)
  const now = new Date().toISOString()
  return (
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels, creationTimestamp: now },
      status: {
        addresses: [
          ...(ip ? [{ type: 'InternalIP', address: ip }] : []),
          { type: 'Hostname', address: name },
        ],
        nodeInfo: {
          kubeletVersion: kubernetesVersion ?? 'unknown',
          osImage: `${process.platform} (SIMULATED kubelet)`,
        },
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'SIMULATED: the kubeadm contract fake registered this Node; no kubelet runs',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
      },
    }) + '\n'
  )
}
