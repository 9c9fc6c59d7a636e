/** The issuer and validator for a variant by name, and the measurements a validator insists on. */
import { CliError } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import type { OpenTpm } from '../tpm/index.js'
import type { Measurements } from './measurements.js'
import { createQemuVtpmIssuer, createQemuVtpmValidator } from './qemu-vtpm.js'
import { createTpmEkIssuer, createTpmEkValidator } from './tpm-ek.js'
import type { Issuer, IssuerOptions, Validator, ValidatorOptions } from './types.js'
import type { AttestationVariant } from './variant.js'

export function createIssuer(variant: AttestationVariant, open: OpenTpm, opts?: IssuerOptions): Issuer {
  switch (variant) {
    case 'qemu-vtpm':
      return createQemuVtpmIssuer(open, opts)
    case 'tpm-ek':
      return createTpmEkIssuer(open, opts)
    default:
      throw new CliError(`attestation variant ${variant} is being built (issue 31)`)
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
    default:
      throw new CliError(`attestation variant ${variant} is being built (issue 31)`)
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
