/**
 * What a node derived while it was bootstrapped, kept on its state disk: the node config names only
 * what the operator sets. The file is Constellation's node_state.json (Role as its name, salt in
 * standard base64), with the disk UUID added for the join service's own registration.
 */
import { canonicalDiskUuid, MEASUREMENT_SALT_BYTES } from '../contract/index.js'
import { CliError } from '../errors/index.js'
import type { NodePaths } from '../paths.js'
import { readRegularFile, writeSecretFile } from '../system/index.js'
import type { NodeRole } from './index.js'

export type NodeStateRole = 'ControlPlane' | 'Worker'

export interface NodeState {
  role: NodeRole
  measurementSalt: Buffer
  /** Lower case; absent in a file Constellation wrote. */
  diskUuid?: string
}

const ROLE_NAMES: Record<NodeRole, NodeStateRole> = { 'control-plane': 'ControlPlane', worker: 'Worker' }

export async function writeNodeState(paths: NodePaths, state: NodeState): Promise<void> {
  const body = JSON.stringify({
    Role: ROLE_NAMES[state.role],
    MeasurementSalt: state.measurementSalt.toString('base64'),
    DiskUUID: state.diskUuid,
  })
  await writeSecretFile(paths.nodeStateFile, body + '\n', 'replace')
}

/** The node state, checked; a CliError naming the file and field when it is missing or malformed. */
export async function readNodeState(paths: NodePaths): Promise<NodeState> {
  const file = paths.nodeStateFile
  const text = (await readRegularFile(file, { what: 'node state', maxBytes: 64 * 1024 })).toString('utf8')
  const bad = (why: string) =>
    new CliError(`node state ${file}: ${why}`, {
      hint: 'the node cannot boot from this state disk; reset it',
    })
  let raw: { Role?: unknown; MeasurementSalt?: unknown; DiskUUID?: unknown }
  try {
    raw = JSON.parse(text) as typeof raw
  } catch {
    throw bad('not JSON')
  }
  const role = Object.entries(ROLE_NAMES).find(([, name]) => name === raw.Role)?.[0] as NodeRole | undefined
  if (!role) throw bad(`Role: ${JSON.stringify(raw.Role)} is not ControlPlane or Worker`)
  const salt =
    typeof raw.MeasurementSalt === 'string' ? Buffer.from(raw.MeasurementSalt, 'base64') : undefined
  if (salt?.length !== MEASUREMENT_SALT_BYTES)
    throw bad(`MeasurementSalt: want ${MEASUREMENT_SALT_BYTES} bytes in standard base64`)
  if (raw.DiskUUID !== undefined && typeof raw.DiskUUID !== 'string') throw bad('DiskUUID: not a string')
  return {
    role,
    measurementSalt: salt,
    diskUuid: raw.DiskUUID === undefined ? undefined : canonicalDiskUuid(raw.DiskUUID),
  }
}
