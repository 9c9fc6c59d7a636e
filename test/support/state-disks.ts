/** A StateDiskRegistry in memory (a TEST DOUBLE for the ConfigMaps): what tests and benches without an API fake use. */
import {
  DiskRecordExistsError,
  type StateDiskRecord,
  type StateDiskRegistry,
} from '../../src/lib/joinservice/state-disks.js'

export class InMemoryStateDisks implements StateDiskRegistry {
  readonly disks = new Map<string, StateDiskRecord>()
  create(uuid: string, record: StateDiskRecord): Promise<void> {
    const owner = this.disks.get(uuid)
    if (owner) return Promise.reject(new DiskRecordExistsError(uuid, owner))
    this.disks.set(uuid, record)
    return Promise.resolve()
  }
  lookup(uuid: string): Promise<StateDiskRecord | undefined> {
    return Promise.resolve(this.disks.get(uuid))
  }
  disksOf(node: string): Promise<string[]> {
    return Promise.resolve([...this.disks].filter(([, r]) => r.node === node).map(([uuid]) => uuid))
  }
  list(): Promise<Array<{ uuid: string; record?: StateDiskRecord }>> {
    return Promise.resolve([...this.disks].map(([uuid, record]) => ({ uuid, record })))
  }
  remove(uuid: string): Promise<void> {
    this.disks.delete(uuid)
    return Promise.resolve()
  }
}
