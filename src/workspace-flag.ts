/**
 * The workspace flag's one check, for the oclif commands (BaseCommand.parse) and init's framework-free
 * entry alike: `-C` names a folder, or a path where one can be made. A file in its place (or on the
 * way to it) can never work, whatever the command, so it is a usage error that names the flag,
 * before any command reads or writes a thing.
 */
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { isErrnoException, UsageError } from './lib/errors/index.js'

export const WORKSPACE_FLAG = '-C/--workspace'

/** Resolves when `dir` is a folder or does not exist yet; a usage error (exit 2) when a file is in the way. */
export async function checkWorkspaceFolder(dir: string): Promise<void> {
  const abs = path.resolve(dir)
  const hint =
    'give -C the workspace folder (the one that holds constellation-conf.yaml); nothing was changed'
  let found
  try {
    found = await stat(abs)
  } catch (err) {
    // not there yet: config generate and mini up make it; the others say what is missing
    if (isErrnoException(err, 'ENOENT')) return
    if (isErrnoException(err, 'ENOTDIR'))
      throw new UsageError(
        `${WORKSPACE_FLAG} ${dir}: ${await fileOnTheWay(abs)} is a file, not a folder`,
        hint,
      )
    throw err
  }
  if (!found.isDirectory())
    throw new UsageError(`${WORKSPACE_FLAG} ${dir}: ${abs} is a file, not a folder`, hint)
}

/** The first component of `abs` that is not a folder. */
async function fileOnTheWay(abs: string): Promise<string> {
  const parts = abs.split(path.sep)
  for (let i = 2; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join(path.sep) || path.sep
    const isDir = await stat(prefix).then(
      (s) => s.isDirectory(),
      () => true,
    )
    if (!isDir) return prefix
  }
  return abs
}
