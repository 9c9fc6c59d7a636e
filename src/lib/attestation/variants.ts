/** The issuer and validator for a variant by name, and the measurements a validator insists on. */
import { CliError } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import type { OpenTpm } from '../tpm/index.js'
import type { Measurements } from './measurements.js'
import { createCvmIssuer } from './cvm/issuer.js'
import { createCvmValidator } from './cvm/validator.js'
import { createQemuVtpmIssuer, createQemuVtpmValidator } from './qemu-vtpm.js'
import { createTpmEkIssuer, createTpmEkValidator } from './tpm-ek.js'
import type { Issuer, IssuerOptions, Validator, ValidatorOptions } from './types.js'
import type { AttestationVariant } from './variant.js'

export function createIssuer(variant: AttestationVariant, open: OpenTpm, opts: IssuerOptions = {}): Issuer {
  switch (variant) {
    case 'qemu-vtpm':
      return createQemuVtpmIssuer(open, opts)
    case 'tpm-ek':
      return createTpmEkIssuer(open, opts)
    default:
      return createCvmIssuer(variant, open, opts)
  }
}

/**
 * tpm-ek needs `opts.roots`, the manufacturer CA certificates EK certificates must chain to; the
 * confidential-VM variants need `opts.cvm`, their pinned vendor root and minimums.
 */
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
    default:
      return createCvmValidator(variant, measurements, log, opts)
  }
}

/** An operator-side trust decision needs at least one expected PCR value. */
export function requireMeasurements(measurements: Measurements): Measurements {
  if (measurements.size === 0) {
    throw new CliError('no measurements to validate the attestation against; refusing to trust any node', {
      hint: 'set the measurements of the attestation variant in the config (attestation.<variant>.measurements)',
    })
  }
  return measurements
}
