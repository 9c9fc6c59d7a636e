/**
 * The state disk's mount boundary as `mini` SIMULATES it: these machines have no device-mapper, so
 * the disk is not mapped or mounted. The key is still checked by the real `cryptsetup open
 * --test-passphrase` (a wrong key fails as the mapping would), and for a fresh file system the
 * directories the state disk holds are emptied, as mkfs would leave them. The node's files then
 * stay in its root folder, unencrypted: a local cluster is for looking at, not for secrets.
 */
import { mkdir, rm } from 'node:fs/promises'
import path from 'node:path'
import type { NodePaths } from '../paths.js'
import type { StateDiskMounter } from '../statedisk/index.js'
import type { Runner } from '../system/index.js'

export function simulatedMounter(runner: Runner, paths: NodePaths): StateDiskMounter {
  return {
    async mount(device, key, { fresh }) {
      await runner.run('cryptsetup', ['open', '--test-passphrase', '--key-file', '-', device], { input: key })
      if (!fresh) return
      for (const dir of [paths.stateDir, ...paths.stateDiskDirs.map((d) => path.join(paths.root, d))]) {
        await rm(dir, { recursive: true, force: true })
        await mkdir(dir, { recursive: true })
      }
    },
  }
}
