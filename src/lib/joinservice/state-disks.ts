/**
 * Which state disks belong to the cluster, and to which node: one ConfigMap per disk,
 * `kube-system/constellation-state-disk-<uuid>`, created (never overwritten) when a join ticket is
 * issued for it, and by each control plane's join service for its own disk (the init node's
 * included). The record holds what identifies the node that may have the disk's key again: its
 * name and address in the cluster's metadata and its TPM (the AK's Name). One object per disk:
 * joins never contend for one object, a lookup is one GET; a label with a digest of the node name
 * finds a node's records without listing every disk.
 */
import { createHash } from 'node:crypto'
import { KubeApiError, type KubeApi } from '../kube/index.js'
import type { NodeRole } from '../nodeconfig/index.js'

export const STATE_DISK_NAMESPACE = 'kube-system'
export const STATE_DISK_CONFIGMAP_PREFIX = 'constellation-state-disk-'
/** Every record carries it, so that the collector lists records and nothing else. */
export const STATE_DISK_LABEL = 'constellation.io/state-disk'
/** SHA-256 of the node name, cut to a label value's 63 characters (node names may have 253). */
export const STATE_DISK_NODE_LABEL = 'constellation.io/state-disk-node'

export interface StateDiskRecord {
  /** The Kubernetes node name the disk was issued to. */
  node: string
  role: NodeRole
  /** The address the node has in the cluster's metadata, which its requests come from. */
  address: string
  /** Hex Name of the attestation key the node attested with: its TPM. */
  tpm: string
  /** When the record was made (ISO 8601): the collector spares records of joins still under way. */
  recordedAt: string
}

/** The disk has a record already; `owner` is that record. */
export class DiskRecordExistsError extends Error {
  constructor(
    readonly uuid: string,
    readonly owner: StateDiskRecord | undefined,
  ) {
    super(`state disk ${uuid} is recorded already${owner ? ` for node ${owner.node}` : ''}`)
    this.name = 'DiskRecordExistsError'
  }
}

export interface StateDiskRegistry {
  /**
   * Records `uuid` (lower case, as checkDiskUuid returns it) for `record.node`; create-only:
   * DiskRecordExistsError when any record of that disk exists.
   */
  create(uuid: string, record: StateDiskRecord): Promise<void>
  /** Undefined when the cluster never recorded that disk (or its record is unreadable). */
  lookup(uuid: string): Promise<StateDiskRecord | undefined>
  /** The disks recorded for `node`. */
  disksOf(node: string): Promise<string[]>
  /** Every recorded disk with its record (unreadable records have none). */
  list(): Promise<Array<{ uuid: string; record?: StateDiskRecord }>>
  remove(uuid: string): Promise<void>
}

export const nodeLabelValue = (node: string): string =>
  createHash('sha256').update(node).digest('hex').slice(0, 63)

export function recordFromData(data: Record<string, string> | undefined): StateDiskRecord | undefined {
  const { node, role, address, tpm, recordedAt } = data ?? {}
  if (!node || (role !== 'control-plane' && role !== 'worker') || !address || !tpm || !recordedAt)
    return undefined
  return { node, role, address, tpm, recordedAt }
}

export function apiStateDiskRegistry(api: KubeApi): StateDiskRegistry {
  const name = (uuid: string) => STATE_DISK_CONFIGMAP_PREFIX + uuid
  const uuidOf = (configMap: string) => configMap.slice(STATE_DISK_CONFIGMAP_PREFIX.length)
  const registry: StateDiskRegistry = {
    async create(uuid, record) {
      const labels = { [STATE_DISK_LABEL]: 'true', [STATE_DISK_NODE_LABEL]: nodeLabelValue(record.node) }
      try {
        await api.createConfigMap(STATE_DISK_NAMESPACE, name(uuid), { ...record }, labels)
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409)
          throw new DiskRecordExistsError(uuid, await registry.lookup(uuid))
        throw err
      }
    },
    async lookup(uuid) {
      return recordFromData((await api.getConfigMap(STATE_DISK_NAMESPACE, name(uuid)))?.data)
    },
    async disksOf(node) {
      const selector = `${STATE_DISK_LABEL}=true,${STATE_DISK_NODE_LABEL}=${nodeLabelValue(node)}`
      const found = await api.listConfigMaps(STATE_DISK_NAMESPACE, selector)
      // the label is a digest: the record's own name decides
      return found.filter((cm) => cm.data.node === node).map((cm) => uuidOf(cm.name))
    },
    async list() {
      const found = await api.listConfigMaps(STATE_DISK_NAMESPACE, `${STATE_DISK_LABEL}=true`)
      return found.map((cm) => ({ uuid: uuidOf(cm.name), record: recordFromData(cm.data) }))
    },
    remove: (uuid) => api.deleteConfigMap(STATE_DISK_NAMESPACE, name(uuid)),
  }
  return registry
}
