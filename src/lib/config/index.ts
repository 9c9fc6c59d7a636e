export { loadConfig, loadConfigIfPresent, loadState, loadStateIfPresent } from './load.js'
export { generateWorkspace } from './generate.js'
export type { GenerateResult } from './generate.js'
export { configSchema, stateSchema } from './schema.js'
export * from './types.js'
export { validateWorkspace, formatFinding } from './validate.js'
export type { WorkspaceValidation } from './validate.js'
export { validatorForConfig, validatorSettingsForConfig } from './validator.js'

export { configuredAttestation } from './attestation.js'

export { initSecretHashFor } from './init-secret-hash.js'
export * from './measurements-update.js'
export * from './join-config-update.js'
