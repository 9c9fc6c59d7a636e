/**
 * RecordingMounter — a TEST DOUBLE for the state disk's mount boundary (these machines have no
 * device-mapper): mini's simulated mounter (the key checked by the real `cryptsetup open
 * --test-passphrase`, a fresh file system's directories emptied), and a record of each mount.
 *
 * Why a double may still stand here: the host cannot map (no device-mapper), and what these tests
 * are about (which disk is formatted, which key opens it, what a reboot asks for) is decided above
 * this boundary, with the real cryptsetup on the LUKS2 header. The mapping itself, dm-crypt with
 * dm-integrity, the file system and the bind mounts, runs for real inside a QEMU VM with the
 * production mounter (deviceMapperMounter): test/e2e/mini-vm.test.ts.
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
