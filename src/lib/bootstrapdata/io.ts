/** Reading the input file, with clear errors: bounded, and only a regular file. */
import { ExitCode } from '../errors/index.js'
import { readYamlFile } from '../yaml/index.js'

export function readInputFile(file: string): Promise<string> {
  return readYamlFile(file, { what: 'input', missingExitCode: ExitCode.Usage })
}
