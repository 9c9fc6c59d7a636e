/**
 * A control plane's own disk record, so that it can rejoin after a reboot. The init node's disk got
 * no ticket, so this is its only record; for a control plane that joined it repeats its ticket's.
 * The API may not answer yet right after kubeadm: ask until it does.
 */
import { chainMessage } from '../errors/index.js'
import { kubernetesNodeName, readNodeState, type NodeMember } from '../nodeconfig/index.js'
import type { NodePaths } from '../paths.js'
import { retry, type Logger } from '../system/index.js'
import { DiskRecordExistsError, type StateDiskRecord, type StateDiskRegistry } from './state-disks.js'

export interface OwnDisk {
  uuid: string
  record: StateDiskRecord
}

export interface OwnDiskSource {
  paths: NodePaths
  /** This node in the metadata; no record without it. */
  self?: NodeMember
  /** The name of this node's TPM attestation key, which the record binds the disk to. */
  readAttestationKeyName: () => Promise<Buffer>
  clock: () => Date
}

/** This control plane's disk record (undefined: no disk recorded in its node state, or no metadata). */
export async function ownDiskRecord(source: OwnDiskSource): Promise<OwnDisk | undefined> {
  const state = await readNodeState(source.paths)
  if (!state.diskUuid || !source.self) return undefined
  const tpm = await source.readAttestationKeyName()
  return {
    uuid: state.diskUuid,
    record: {
      node: kubernetesNodeName(source.self.name),
      role: state.role,
      address: source.self.vpcIP,
      tpm: tpm.toString('hex'),
      recordedAt: source.clock().toISOString(),
    },
  }
}

/** Records `own()` (undefined: this node has no disk to record); logs what happened, never rejects. */
export async function recordOwnDisk(
  stateDisks: StateDiskRegistry,
  own: () => Promise<OwnDisk | undefined>,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  try {
    const disk = await own()
    if (!disk) return
    const recorded = await retry(() => createOrFind(stateDisks, disk), {
      attempts: Number.POSITIVE_INFINITY,
      initialDelayMs: 1_000,
      maxDelayMs: 30_000,
      retryable: () => true,
      signal,
      onRetry: (err, attempt) =>
        log.warn("Recording this node's state disk failed; trying again", {
          attempt,
          error: chainMessage(err),
        }),
    })
    if (recorded.node === disk.record.node)
      log.info("Recorded this node's state disk", { diskUUID: disk.uuid, node: disk.record.node })
    else
      log.error(
        "This node's state disk is recorded for another node: it cannot rejoin without `constellation recover`",
        {
          diskUUID: disk.uuid,
          recordedFor: recorded.node,
        },
      )
  } catch (err) {
    if (!signal.aborted)
      log.warn("This node's state disk is not recorded: it cannot rejoin without `constellation recover`", {
        error: chainMessage(err),
      })
  }
}

/** The record now in place: ours, or the one that was there (a restart of this service, or not ours). */
async function createOrFind(stateDisks: StateDiskRegistry, disk: OwnDisk): Promise<StateDiskRecord> {
  try {
    await stateDisks.create(disk.uuid, disk.record)
    return disk.record
  } catch (err) {
    if (err instanceof DiskRecordExistsError && err.owner) return err.owner
    throw err
  }
}
