/**
 * RecordingMounter — a TEST DOUBLE for the state disk's mount boundary (these machines have no
 * device-mapper): mini's simulated mounter (the key checked by the real `cryptsetup open
 * --test-passphrase`, a fresh file system's directories emptied), and a record of each mount.
 */
import type { NodePaths } from '../../src/lib/paths.js'
import { simulatedMounter } from '../../src/lib/simulator/simulated-mounter.js'
import type { StateDiskMounter } from '../../src/lib/statedisk/index.js'
import { createRunner } from '../../src/lib/system/index.js'

export class RecordingMounter implements StateDiskMounter {
  readonly mounts: Array<{ device: string; fresh: boolean }> = []
  private readonly simulated: StateDiskMounter

  constructor(paths: NodePaths) {
    this.simulated = simulatedMounter(createRunner(), paths)
  }

  async mount(device: string, key: Buffer, opts: { fresh: boolean }): Promise<void> {
    await this.simulated.mount(device, key, opts)
    this.mounts.push({ device, fresh: opts.fresh })
  }
}
