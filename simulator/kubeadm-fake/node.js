/* global process */
/**
 * The Node object a kubelet registers once kubeadm started it. The kubelet stand-in
 * (simulator/kubelet-unit/kubelet) posts no registration, so the kubeadm contract fake writes it,
 * with the status a healthy kubelet would first report: the node's address (its `node-ip` kubelet
 * argument), the kubelet version, no pressure, and Ready, whose message says the kubelet is
 * SIMULATED. From then on the stand-in keeps the status and the node's Lease fresh.
 */
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { objectFile } from '../api-layout.js'
import { nodeIp } from './kubelet-start.js'

/** The cluster's version as kubeadm init uploaded it (what a joining node's kubelet runs). */
export function uploadedKubernetesVersion(apiDir) {
  try {
    const cm = JSON.parse(
      readFileSync(
        objectFile(apiDir, { resource: 'configmaps', namespace: 'kube-system', name: 'kubeadm-config' }),
        'utf8',
      ),
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
          ...[
            ['MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
            ['DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
            ['PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
          ].map(([type, reason, message]) => ({
            type,
            status: 'False',
            reason,
            message,
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          })),
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
