/** Output paths, checked before anything is written so a clash leaves the disk untouched. */
import { lstat, stat } from 'node:fs/promises'
import path from 'node:path'
import { CliError, UsageError } from '../errors/index.js'
import type { Assignment } from './orchestrate.js'
import type { OutputFormat } from './types.js'

export async function outputTargets(output: string, assignments: Assignment[], formats: OutputFormat[]) {
  const existing = await stat(output).catch(() => undefined)
  // A path that does not exist yet is a directory when several machines need a file each.
  const isDir =
    output.endsWith('/') ||
    existing?.isDirectory() === true ||
    (existing === undefined && assignments.length > 1)
  if (!isDir && assignments.length > 1) {
    throw new UsageError(
      `-o ${output} is a file, but ${assignments.length} machines get data; pass a directory or --machine`,
    )
  }
  const dir = isDir ? path.resolve(output) : path.dirname(path.resolve(output))
  const files = assignments.map((a, i) =>
    isDir
      ? path.join(
          dir,
          `${a.machine.metadata.name}.${formats[i]?.endsWith('ignition') ? 'ign' : 'cloud-config'}`,
        )
      : path.resolve(output),
  )
  for (const file of files) {
    if (await exists(file))
      throw new CliError(
        `${file} already exists`,
        1,
        'move it away or choose another -o; nothing was changed',
      )
  }
  return { dir, files }
}

/** lstat, not access: a dangling symlink is there too (an exclusive create would fail on it). */
export const exists = (file: string) =>
  lstat(file).then(
    () => true,
    () => false,
  )
