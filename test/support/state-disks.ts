/** A StateDiskRegistry in memory (a TEST DOUBLE for the ConfigMaps): what tests and benches without an API fake use. */
import type { StateDiskRecord, StateDiskRegistry } from '../../src/lib/joinservice/index.js'

export class InMemoryStateDisks implements StateDiskRegistry {
  readonly disks = new Map<string, StateDiskRecord>()
  register(uuid: string, record: StateDiskRecord): Promise<void> {
    this.disks.set(uuid, record)
    return Promise.resolve()
  }
  lookup(uuid: string): Promise<StateDiskRecord | undefined> {
    return Promise.resolve(this.disks.get(uuid))
  }
}
