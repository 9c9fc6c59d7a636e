/** Reading the input file, with clear errors. */
import { readFile } from 'node:fs/promises'
import { CliError, isErrnoException } from '../errors/index.js'

export async function readInputFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) throw new CliError(`input ${file} does not exist`, 2)
    throw new CliError(`reading input ${file}`, 1, undefined, { cause: err })
  }
}
