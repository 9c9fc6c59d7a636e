/**
 * The one boundary between the state disk's header and its contents: map the LUKS device with a
 * key and mount its file system where the node keeps its state. Production uses device-mapper and
 * mount(8); machines without device-mapper (CI) put a recording double in its place.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import type { NodePaths } from '../paths.js'
import type { Runner } from '../system/index.js'
import { CRYPTSETUP } from './luks.js'

export interface StateDiskMounter {
  /**
   * Maps `device` with `key` and mounts it at `paths.stateDir`, with `paths.stateDiskDirs` bound
   * from it. `fresh`: the disk was just formatted, so a new file system is made first.
   */
  mount(device: string, key: Buffer, opts: { fresh: boolean }): Promise<void>
}

/** The device-mapper name, as Constellation's disk-mapper calls its mapping. */
export const STATE_MAPPING = 'state'

/** cryptsetup open (key on stdin), mkfs.ext4 on a fresh disk, mount, and one bind mount per persistent directory. */
export function deviceMapperMounter(runner: Runner, paths: NodePaths): StateDiskMounter {
  const mapped = `/dev/mapper/${STATE_MAPPING}`
  return {
    async mount(device, key, { fresh }) {
      await runner.run(CRYPTSETUP, ['open', '--type', 'luks2', '--key-file', '-', device, STATE_MAPPING], {
        input: key,
      })
      if (fresh) await runner.run('mkfs.ext4', ['-q', '-L', 'constellation-state', mapped])
      await mkdir(paths.stateDir, { recursive: true, mode: 0o755 })
      await runner.run('mount', [mapped, paths.stateDir])
      for (const dir of paths.stateDiskDirs) {
        const source = path.join(paths.stateDir, 'persistent', dir)
        const target = path.join(paths.root, dir)
        await mkdir(source, { recursive: true, mode: 0o755 })
        await mkdir(target, { recursive: true, mode: 0o755 })
        await runner.run('mount', ['--bind', source, target])
      }
    },
  }
}
