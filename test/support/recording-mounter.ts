/**
 * RecordingMounter — a TEST DOUBLE for the state disk's mount boundary (these machines have no
 * device-mapper). It checks the key with the real `cryptsetup open --test-passphrase` (so a mount
 * with a wrong key fails as the real mapping would), records each mount, and for a fresh file system
 * empties the directories the state disk holds, as mkfs would leave them.
 */
import { mkdir, rm } from 'node:fs/promises'
import path from 'node:path'
import type { NodePaths } from '../../src/lib/paths.js'
import type { StateDiskMounter } from '../../src/lib/statedisk/index.js'
import { createRunner } from '../../src/lib/system/index.js'

export class RecordingMounter implements StateDiskMounter {
  readonly mounts: Array<{ device: string; fresh: boolean }> = []

  constructor(private readonly paths: NodePaths) {}

  async mount(device: string, key: Buffer, opts: { fresh: boolean }): Promise<void> {
    await createRunner().run('cryptsetup', ['open', '--test-passphrase', '--key-file', '-', device], {
      input: key,
    })
    if (opts.fresh)
      for (const dir of [
        this.paths.stateDir,
        ...this.paths.stateDiskDirs.map((d) => path.join(this.paths.root, d)),
      ]) {
        await rm(dir, { recursive: true, force: true })
        await mkdir(dir, { recursive: true })
      }
    this.mounts.push({ device, fresh: opts.fresh })
  }
}
