/** Attestation variants: issue a document bound to (userData, nonce), validate it against measurements. */
import { CliError } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import type { OpenTpm } from '../tpm/index.js'
import type { Measurements } from './measurements.js'
import {
  createQemuVtpmIssuer,
  createQemuVtpmValidator,
  type Issuer,
  type IssuerOptions,
  type Validator,
} from './qemu-vtpm.js'
import type { AttestationVariant } from './variant.js'

export type { Issuer, Validator, ValidationResult } from './qemu-vtpm.js'
export type { Measurements, MeasurementEntry, MeasurementsConfig } from './measurements.js'
export {
  measurementsFromConfig,
  clusterIdPcrValue,
  compareMeasurements,
  CLUSTER_ID_PCR,
  MEASUREMENT_SALT_BYTES,
} from './measurements.js'
export { AttestationError } from './errors.js'
export {
  encodeJoinConfig,
  parseJoinConfig,
  measurementsForJoins,
  JoinConfigError,
  JOIN_CONFIG_MAP,
} from './join-config.js'
export { ATTESTATION_VARIANTS } from './variant.js'
export type { AttestationVariant } from './variant.js'

export function createIssuer(variant: AttestationVariant, open: OpenTpm, opts?: IssuerOptions): Issuer {
  switch (variant) {
    case 'qemu-vtpm':
      return createQemuVtpmIssuer(open, opts)
  }
}

export function createValidator(
  variant: AttestationVariant,
  measurements: Measurements,
  log?: Logger,
): Validator {
  switch (variant) {
    case 'qemu-vtpm':
      return createQemuVtpmValidator(measurements, log)
  }
}

/** An operator-side trust decision needs at least one expected PCR value. */
export function requireMeasurements(measurements: Measurements): Measurements {
  if (measurements.size === 0) {
    throw new CliError('no measurements to validate the attestation against; refusing to trust any node', {
      hint: 'set attestation.qemuVTPM.measurements in the config',
    })
  }
  return measurements
}
