export { loadConfig, loadState, loadStateIfPresent, parseConfig, parseState, isCidr } from './load.js'
export {
  generateWorkspace,
  defaultConfig,
  defaultMeasurements,
  defaultState,
  DEFAULT_ENFORCED_PCRS,
} from './generate.js'
export type { GenerateOptions, GenerateResult } from './generate.js'
export { configSchema, stateSchema } from './schema.js'
export * from './types.js'
export { validateWorkspace, formatFinding } from './validate.js'
export type { WorkspaceValidation, ValidationFinding } from './validate.js'
export { validatorForConfig } from './validator.js'
export { initSecretHashFor } from './init-secret-hash.js'
export * from './measurements-update.js'
