/**
 * The etcd of a mini cluster, SIMULATED: no etcd runs (the Kubernetes API is the simulator's), so
 * its membership is derived as kubeadm's stacked etcd would have it: one member per control-plane
 * Node, named after the node, with the peer URL `https://<InternalIP>:2380` and an ID from the name.
 * MemberRemove marks the member's Node (annotation below) until the Node itself is deleted, so a
 * removal interrupted between the two steps is not counted twice.
 */
import { createHash } from 'node:crypto'
import type { NodeAdmin } from '../kube/index.js'
import { peerUrlOf, type EtcdMembership } from '../nodes/index.js'

export const SIMULATED_ETCD_REMOVED = 'simulator.constellation.io/etcd-member-removed'
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane'

export function simulatedEtcd(api: NodeAdmin, now: () => Date = () => new Date()): EtcdMembership {
  return {
    where: "the mini cluster's SIMULATED etcd (one member per control-plane Node)",
    async members() {
      return (await api.listNodes())
        .filter(
          (n) => n.labels[CONTROL_PLANE_LABEL] !== undefined && !(SIMULATED_ETCD_REMOVED in n.annotations),
        )
        .map((n) => ({
          id: createHash('sha256').update(n.name).digest('hex').slice(0, 16),
          name: n.name,
          peerURLs: n.internalIP ? [peerUrlOf(n.internalIP)] : [],
        }))
    },
    async remove(member) {
      await api.annotateNode(member.name, SIMULATED_ETCD_REMOVED, now().toISOString())
    },
  }
}
