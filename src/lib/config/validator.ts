/** The validator an operator's config asks for. */
import {
  createValidator,
  measurementsFromConfig,
  requireMeasurements,
  readTdxCollateral,
  type AttestationVariant,
  type CvmValidationPolicy,
  type Measurements,
  type Validator,
  type ValidatorOptions,
} from '../attestation/index.js'
import type { Logger } from '../system/index.js'
import {
  configTrustRoots,
  configuredAttestation,
  snpSettings,
  tdxSettings,
  type SnpSettings,
  type TdxSettings,
} from './attestation.js'
import type { ClusterConfig } from './types.js'

/** What a validator is built from: the config's variant, its measurements and its settings. */
export interface ValidatorSettings {
  variant: AttestationVariant
  measurements: Measurements
  options: ValidatorOptions
  /** A confidential-VM variant's resolved section (roots read, hex decoded). */
  cvm?: SnpSettings | TdxSettings
}

/**
 * The config's variant and its settings, for callers that build the validator themselves (verify
 * compares the measurements on its own to report every PCR). Roots are read here, so a missing or
 * unreadable root file fails before any node is dialled.
 */
export function validatorSettingsForConfig(config: ClusterConfig): ValidatorSettings {
  const attestation = configuredAttestation(config)
  const measurements = measurementsFromConfig(attestation.measurements)
  const at = ['attestation', attestation.key]
  switch (attestation.variant) {
    case 'qemu-vtpm':
      return { variant: 'qemu-vtpm', measurements, options: {} }
    case 'tpm-ek':
      return { variant: 'tpm-ek', measurements, options: { roots: configTrustRoots(attestation.roots) } }
    case 'aws-sev-snp':
    case 'gcp-sev-snp':
    case 'azure-sev-snp': {
      const cvm = snpSettings(attestation.section, undefined, at)
      return { variant: attestation.variant, measurements, options: { cvm: cvmValidationPolicy(cvm) }, cvm }
    }
    case 'qemu-tdx':
    case 'azure-tdx': {
      const cvm = tdxSettings(attestation.section, undefined, at)
      return { variant: attestation.variant, measurements, options: { cvm: cvmValidationPolicy(cvm) }, cvm }
    }
  }
}

/** Refuses a config without measurements (it would trust any node), and tpm-ek without roots. */
export function validatorForConfig(config: ClusterConfig, log?: Logger): Validator {
  const { variant, measurements, options } = validatorSettingsForConfig(config)
  return createValidator(variant, requireMeasurements(measurements), log, options)
}

/**
 * What a CVM validator is given from a resolved section: the pinned roots and minimums, and for TDX
 * the collateral read from its directory (so a bad file fails before any node is dialled).
 */
export function cvmValidationPolicy(settings: SnpSettings | TdxSettings): CvmValidationPolicy {
  if ('arks' in settings)
    return {
      kind: 'snp',
      arks: settings.arks,
      signingKeyPins: settings.signingKeyPins,
      minimumTcb: settings.minimumTcb,
      launchMeasurement: settings.launchMeasurement,
      allowMigrationAgent: settings.allowMigrationAgent,
      allowSmt: settings.allowSmt,
    }
  const { measurements: _measurements, collateralDir, ...tdx } = settings
  return { kind: 'tdx', ...tdx, collateral: collateralDir ? readTdxCollateral(collateralDir) : undefined }
}
