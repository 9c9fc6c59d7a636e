/** Reading the input file, with clear errors: bounded, and only a regular file. */
import { readYamlFile } from '../yaml/index.js'

export function readInputFile(file: string): Promise<string> {
  return readYamlFile(file, { what: 'input' })
}
