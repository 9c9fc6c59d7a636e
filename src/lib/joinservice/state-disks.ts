/**
 * Which state disks belong to the cluster, so that a rejoin for any other disk is refused: one
 * ConfigMap per disk, `kube-system/constellation-state-disk-<uuid>`, written when a join ticket is
 * issued for it (and by each control plane's join service for its own disk, the init node's
 * included). One object per disk: joins never contend for one object, a lookup is one GET.
 */
import type { KubeApi } from '../kube/index.js'
import type { NodeRole } from '../nodeconfig/index.js'

export const STATE_DISK_NAMESPACE = 'kube-system'
export const STATE_DISK_CONFIGMAP_PREFIX = 'constellation-state-disk-'

export interface StateDiskRecord {
  /** The Kubernetes node name the disk was issued to. */
  node: string
  role: NodeRole
}

export interface StateDiskRegistry {
  /** `diskUuid` lower case, as checked by checkDiskUuid. */
  register(diskUuid: string, record: StateDiskRecord): Promise<void>
  /** Undefined when the cluster never issued a ticket for that disk (or its record is unreadable). */
  lookup(diskUuid: string): Promise<StateDiskRecord | undefined>
}

export function apiStateDiskRegistry(api: KubeApi): StateDiskRegistry {
  const name = (uuid: string) => STATE_DISK_CONFIGMAP_PREFIX + uuid
  return {
    register: (uuid, record) =>
      api.applyConfigMap(STATE_DISK_NAMESPACE, name(uuid), { node: record.node, role: record.role }),
    async lookup(uuid) {
      const found = await api.getConfigMap(STATE_DISK_NAMESPACE, name(uuid))
      const { node, role } = found?.data ?? {}
      if (!node || (role !== 'control-plane' && role !== 'worker')) return undefined
      return { node, role }
    },
  }
}
