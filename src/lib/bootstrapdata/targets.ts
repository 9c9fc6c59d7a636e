/** Output paths, checked before anything is written so a clash leaves the disk untouched. */
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { CliError, UsageError } from '../errors/index.js'
import { exists } from '../system/index.js'
import type { OutputFormat } from './types.js'

/** What a machine needs to be given an output file. */
export interface Placeable {
  machine: { metadata: { name: string } }
  format: OutputFormat
}

/** Gives each machine its output file: `-o` itself for one machine, `<dir>/<machine>.<ext>` otherwise. */
export async function outputTargets<T extends Placeable>(
  output: string,
  machines: readonly T[],
): Promise<{ dir: string; placed: Array<T & { file: string }> }> {
  const existing = await stat(output).catch(() => undefined)
  // A path that does not exist yet is a directory when several machines need a file each.
  const isDir =
    output.endsWith('/') ||
    existing?.isDirectory() === true ||
    (existing === undefined && machines.length > 1)
  if (!isDir && machines.length > 1) {
    throw new UsageError(
      `-o ${output} is a file, but ${machines.length} machines get data; pass a directory or --machine`,
    )
  }
  const dir = isDir ? path.resolve(output) : path.dirname(path.resolve(output))
  const placed = machines.map((m) => ({
    ...m,
    file: isDir
      ? path.join(dir, `${m.machine.metadata.name}.${m.format.endsWith('ignition') ? 'ign' : 'cloud-config'}`)
      : path.resolve(output),
  }))
  for (const { file } of placed) {
    if (await exists(file))
      throw new CliError(`${file} already exists`, {
        hint: 'move it away or choose another -o; nothing was changed',
      })
  }
  return { dir, placed }
}
