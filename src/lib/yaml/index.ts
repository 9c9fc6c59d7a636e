/**
 * The one YAML loader. It keeps source positions, so every problem found later (schema or
 * semantic) can name the file, the key path and the line:column where it sits.
 */
export {
  YamlProblemsError,
  listLines,
  formatPath,
  formatProblem,
  readYamlFile,
  parseYamlDocuments,
  parseYaml,
  throwIfProblems,
  stringifyYaml,
} from './loader.js'
export type { KeyPath, Problem, Located, YamlSource } from './loader.js'
export { checkSchema } from './schema.js'
export type { JsonSchema } from './schema.js'
