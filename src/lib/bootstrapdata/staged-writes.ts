/**
 * The run's local output (CA set, admin kubeconfig, token Secret, user data) is written in one
 * step at the very end, after every check passed, and as a unit: if one write fails, the files
 * and directories written before it are removed again, so a failed run leaves nothing new.
 */
import { mkdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { CliError, chainMessage } from '../errors/index.js'
import { counted, writeFileExclusive, writeSecretFile } from '../system/index.js'

export interface StagedFile {
  file: string
  content: string
  /** Keys, tokens, user data that carries them: 0600 (writeSecretFile); anything else 0644. */
  secret: boolean
}

/** A certificate: anyone may read it. */
const PUBLIC_FILE_MODE = 0o644

export interface WrittenFiles {
  files: string[]
  /** Removes everything written (for a failure after the writes, e.g. a refused registration). */
  undo(): Promise<void>
}

/** Writes every file create-exclusive (never clobbering), all or nothing. */
export async function writeAllOrNothing(staged: readonly StagedFile[]): Promise<WrittenFiles> {
  const files: string[] = []
  const dirs: string[] = []
  const undo = async () => {
    for (const file of [...files].reverse()) await rm(file, { force: true })
    // Directories this run created, deepest first; each held only what this run wrote.
    for (const dir of [...dirs].reverse()) await rm(dir, { recursive: true, force: true })
  }
  for (const { file, content, secret } of staged) {
    try {
      const made = await mkdir(path.dirname(file), { recursive: true })
      if (made !== undefined) dirs.push(made)
      await (secret
        ? writeSecretFile(file, content, 'exclusive')
        : writeFileExclusive(file, content, PUBLIC_FILE_MODE))
      files.push(file)
    } catch (err) {
      const count = files.length
      await undo()
      throw new CliError(`writing ${file}: ${chainMessage(err)}`, {
        hint:
          count === 0
            ? 'nothing was written; fix the output location and run again'
            : `removed the ${counted(count, 'file')} this run had written; nothing else was changed`,
        cause: err,
      })
    }
  }
  return { files, undo }
}
