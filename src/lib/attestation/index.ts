/** Attestation variants: issue a document bound to (userData, nonce), validate it against measurements. */
export { createIssuer, createValidator, requireMeasurements } from './variants.js'
export type {
  ActivationExpectation,
  ActivationTarget,
  Issuer,
  ValidationResult,
  Validator,
  ValidatorOptions,
} from './types.js'

export { readTrustRoots } from './trust-roots.js'
export type { Measurements, MeasurementEntry, MeasurementsConfig } from './measurements.js'
export {
  measurementsFromConfig,
  clusterIdPcrValue,
  compareMeasurements,
  CLUSTER_ID_PCR,
} from './measurements.js'
export { AttestationError } from './errors.js'
export {
  encodeJoinConfig,
  parseJoinConfig,
  measurementsForJoins,
  JoinConfigError,
  JOIN_CONFIG_MAP,
} from './join-config.js'
export { ATTESTATION_VARIANTS, attestationAssurance, describeAssurance, describeHardware } from './variant.js'
export type { AttestationVariant, AttestationAssurance } from './variant.js'
export { AMD_ROOT_KEYS_BUNDLE, INTEL_SGX_ROOT_CA } from './vendor-roots.js'
export { isCvmVariant } from './variant.js'
export type { CvmVariant } from './variant.js'
export type {
  CvmHardware,
  CvmSummary,
  CvmValidationPolicy,
  SnpValidationPolicy,
  TdxValidationPolicy,
} from './cvm/policy.js'
export { cvmKind } from './cvm/validator.js'
export * as snp from './snp/index.js'
export * as azure from './azure/index.js'
export * as tdx from './tdx/index.js'
export { readTdxCollateral } from './tdx/index.js'
export { azureImds } from './cvm/azure-imds.js'
export { checkEvidence } from './evidence-check.js'
export type { EvidenceCheck } from './evidence-check.js'
export { renderEvidenceCheck } from './evidence-check-render.js'
export type { ReplayedEvent } from './eventlog/replay.js'
export { imageLoadEvent, measureBoot, pcrsAfter } from './eventlog/write.js'
export type { BootMeasurement } from './eventlog/write.js'
export { EVENT_TYPES } from './eventlog/describe.js'
