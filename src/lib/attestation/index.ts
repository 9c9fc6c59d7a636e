/** Attestation variants: issue a document bound to (userData, nonce), validate it against measurements. */
import { CliError } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import type { OpenTpm } from '../tpm/index.js'
import type { Measurements } from './measurements.js'
import { createQemuVtpmIssuer, createQemuVtpmValidator } from './qemu-vtpm.js'
import { createTpmEkIssuer, createTpmEkValidator } from './tpm-ek.js'
import type { Issuer, IssuerOptions, Validator, ValidatorOptions } from './types.js'
import type { AttestationVariant } from './variant.js'

export type {
  ActivationChallenge,
  ActivationExpectation,
  ActivationTarget,
  Issuer,
  IssuerOptions,
  ValidationResult,
  Validator,
  ValidatorOptions,
} from './types.js'
export { createTpmEkIssuer, createTpmEkValidator, ACTIVATION_SECRET_BYTES } from './tpm-ek.js'
export type { TpmEkIssuer, TpmEkValidator } from './tpm-ek.js'
export { encodeActivationRequest, decodeActivationRequest } from './activation-request.js'
export type { ActivationRequest } from './activation-request.js'
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
export {
  ATTESTATION_VARIANTS,
  VARIANT_OIDS,
  isAttestationVariant,
  attestationAssurance,
  describeAssurance,
} from './variant.js'
export type { AttestationVariant, AttestationAssurance } from './variant.js'

export function createIssuer(variant: AttestationVariant, open: OpenTpm, opts?: IssuerOptions): Issuer {
  switch (variant) {
    case 'qemu-vtpm':
      return createQemuVtpmIssuer(open, opts)
    case 'tpm-ek':
      return createTpmEkIssuer(open, opts)
  }
}

/** tpm-ek needs `opts.roots`, the manufacturer CA certificates EK certificates must chain to. */
export function createValidator(
  variant: AttestationVariant,
  measurements: Measurements,
  log?: Logger,
  opts: ValidatorOptions = {},
): Validator {
  switch (variant) {
    case 'qemu-vtpm':
      return createQemuVtpmValidator(measurements, log)
    case 'tpm-ek':
      return createTpmEkValidator(measurements, opts.roots ?? [], log, opts)
  }
}

/** An operator-side trust decision needs at least one expected PCR value. */
export function requireMeasurements(measurements: Measurements): Measurements {
  if (measurements.size === 0) {
    throw new CliError('no measurements to validate the attestation against; refusing to trust any node', {
      hint: 'set the measurements of attestation.qemuVTPM or attestation.tpmEK in the config',
    })
  }
  return measurements
}
