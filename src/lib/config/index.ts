export { loadConfig, loadConfigIfPresent, loadState, loadStateIfPresent } from './load.js'
export { generateWorkspace, PROVIDERS, PROVIDER_VARIANTS } from './generate.js'
export type { GenerateResult, Provider } from './generate.js'
export { configSchema, stateSchema } from './schema.js'

export type {
  ChartConfig,
  ClusterConfig,
  ClusterState,
  NodeSnpAttestationConfig,
  NodeTdxAttestationConfig,
} from './types.js'
export { ATTESTATION_CONFIG_KEYS } from './types.js'
export { validateWorkspace, formatFinding } from './validate.js'
export type { WorkspaceValidation } from './validate.js'
export { cvmValidationPolicy, validatorForConfig, validatorSettingsForConfig } from './validator.js'

export { configuredAttestation, snpSettings, tdxSettings } from './attestation.js'
export type { SnpSettings, TdxSettings } from './attestation.js'
export { cvmSectionProblems } from './cvm-sections.js'
export { cvmSectionSchemas, explainHexProblem } from './attestation-schema.js'

export { initSecretHashFor } from './init-secret-hash.js'
export {
  readConfigMeasurements,
  planMeasurementsUpdate,
  measurementNotes,
  nodeSource,
} from './measurements-update.js'
export type { MeasurementUpdate } from './measurements-update.js'
export { offerMeasurementsUpdate } from './measurements-offer.js'
export { signedSource } from './signed-measurements.js'
export { planFetchedMeasurements } from './fetch-measurements.js'
export type { FetchPlan } from './fetch-measurements.js'
export {
  JOIN_CONFIG_REQUEST_TIMEOUT_MS,
  joinMeasurementsFromConfig,
  clusterJoinMeasurements,
  planJoinConfigUpdate,
  joinConfigChanged,
  renderJoinConfigUpdate,
} from './join-config-update.js'
export type { JoinConfigChange } from './join-config-update.js'
