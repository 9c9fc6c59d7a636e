/**
 * The cluster's record of a Kubernetes upgrade (NodeVersion-style): the ConfigMap
 * kube-system/constellation-kubernetes-upgrade, key `upgrade`, a JSON document with the target, the
 * components' digest, the node order and each node's result. An interrupted upgrade resumes from it
 * with the same id, `status` compares every kubelet against its target, and a failure stays written
 * there (with the node's own status annotation) until a run finishes the upgrade.
 */
import { messageOf } from '../errors/index.js'
import type { KubeApi } from '../kube/index.js'
import type { NodeUpgradeStep } from '../nodeupgrade/index.js'

export const UPGRADE_RECORD = {
  namespace: 'kube-system',
  name: 'constellation-kubernetes-upgrade',
  key: 'upgrade',
} as const

export type RecordState = 'running' | 'succeeded' | 'failed'

export interface NodeResult {
  state: 'succeeded' | 'failed'
  at: string
  phase?: string
  message?: string
  /** false: the node's step failed before anything on it changed. */
  nodeChanged?: boolean
}

export interface UpgradeRecord {
  id: string
  from: string
  target: string
  /** sha256 of the components as the join service hands them out. */
  componentsDigest: string
  state: RecordState
  startedAt: string
  updatedAt: string
  order: Array<{ node: string; step: NodeUpgradeStep }>
  nodes: Record<string, NodeResult>
  failure?: { node: string; phase?: string; message: string }
}

export type RecordApi = Pick<KubeApi, 'getConfigMap' | 'applyConfigMap'>

const WHERE = `ConfigMap ${UPGRADE_RECORD.namespace}/${UPGRADE_RECORD.name}, key ${UPGRADE_RECORD.key}`

export async function readUpgradeRecord(
  api: Pick<KubeApi, 'getConfigMap'>,
): Promise<UpgradeRecord | undefined> {
  const cm = await api.getConfigMap(UPGRADE_RECORD.namespace, UPGRADE_RECORD.name)
  const text = cm?.data[UPGRADE_RECORD.key]
  if (text === undefined) return undefined
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new Error(`${WHERE}: not JSON: ${messageOf(err)}`, { cause: err })
  }
  const r = (typeof doc === 'object' && doc !== null ? doc : {}) as Record<string, unknown>
  for (const key of ['id', 'from', 'target', 'state'] as const)
    if (typeof r[key] !== 'string') throw new Error(`${WHERE}: ${key}: want a string`)
  if (!['running', 'succeeded', 'failed'].includes(r.state as string))
    throw new Error(`${WHERE}: state: want running, succeeded or failed, not ${JSON.stringify(r.state)}`)
  return {
    ...(r as unknown as UpgradeRecord),
    order: Array.isArray(r.order) ? (r.order as UpgradeRecord['order']) : [],
    nodes: typeof r.nodes === 'object' && r.nodes !== null ? (r.nodes as UpgradeRecord['nodes']) : {},
  }
}

export async function writeUpgradeRecord(api: RecordApi, record: UpgradeRecord): Promise<void> {
  await api.applyConfigMap(UPGRADE_RECORD.namespace, UPGRADE_RECORD.name, {
    [UPGRADE_RECORD.key]: JSON.stringify(record, null, 2),
  })
}
