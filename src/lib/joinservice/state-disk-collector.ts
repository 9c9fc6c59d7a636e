/**
 * Disk records go with their node: a record whose Node is gone (deleted by the operator or the
 * cloud controller) lets nothing rejoin any more, so it is removed, as Kubernetes' garbage collector
 * removes what a deleted object owned. A record is spared while its join may still be under way: the
 * Node registers only during `kubeadm join`, after the ticket was issued.
 */
import { chainMessage } from '../errors/index.js'
import type { KubeApi } from '../kube/index.js'
import type { Logger } from '../system/index.js'
import type { StateDiskRegistry } from './state-disks.js'

/** Longer than a join can take: the ticket's bootstrap token lives 15 minutes. */
export const STATE_DISK_RECORD_GRACE_MS = 30 * 60_000
export const STATE_DISK_COLLECT_INTERVAL_MS = 5 * 60_000

export interface CollectOptions {
  stateDisks: StateDiskRegistry
  hasNode: KubeApi['hasNode']
  clock: () => Date
  graceMs?: number
}

/** Removes the records of nodes that are gone; resolves with the disks removed. */
export async function collectStateDisks(opts: CollectOptions): Promise<string[]> {
  const graceMs = opts.graceMs ?? STATE_DISK_RECORD_GRACE_MS
  const now = opts.clock().getTime()
  const removed: string[] = []
  for (const { uuid, record } of await opts.stateDisks.list()) {
    // an unreadable record serves nobody (lookups ignore it): it goes
    if (record && now - Date.parse(record.recordedAt) < graceMs) continue
    if (record && (await opts.hasNode(record.node))) continue
    await opts.stateDisks.remove(uuid)
    removed.push(uuid)
  }
  return removed
}

/** Collects now and then every intervalMs until `signal` aborts; a failed round is logged and the next one tries again. */
export function collectStateDisksPeriodically(
  opts: CollectOptions & { log: Logger; signal: AbortSignal; intervalMs?: number },
): void {
  const round = () =>
    collectStateDisks(opts).then(
      (removed) => {
        if (removed.length > 0)
          opts.log.info('Removed the disk records of nodes that are gone', { disks: removed })
      },
      (err: unknown) => opts.log.warn('Collecting disk records failed', { error: chainMessage(err) }),
    )
  const timer = setInterval(() => void round(), opts.intervalMs ?? STATE_DISK_COLLECT_INTERVAL_MS).unref()
  opts.signal.addEventListener('abort', () => clearInterval(timer), { once: true })
}
