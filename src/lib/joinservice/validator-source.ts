/** The join-direction validator, rebuilt from the measurements in force whenever they change. */
import { AttestationError } from '../attestation/index.js'
import type { Measurements, Validator } from '../attestation/index.js'
import type { MeasurementsSource } from './measurements-store.js'

export interface ValidatorSource {
  /** The validator for the measurements in force now. */
  current(): Validator
}

/**
 * Builds a validator for each measurement set the source hands out, once: the store replaces its
 * set on every accepted update, so object identity says when to rebuild.
 */
export function validatorSourceFrom(
  measurements: MeasurementsSource,
  build: (m: Measurements) => Validator,
): ValidatorSource {
  const built = new WeakMap<Measurements, Validator>()
  return {
    current() {
      const m = measurements.current()
      let v = built.get(m)
      if (!v) built.set(m, (v = build(m)))
      return v
    },
  }
}

/** One Validator for the aTLS listener that asks the source on every handshake. */
export function handshakeValidator(source: ValidatorSource): Validator {
  return {
    get variant() {
      return source.current().variant
    },
    get oid() {
      return source.current().oid
    },
    validate: (document, nonce, expected) => source.current().validate(document, nonce, expected),
    challengeActivation: (request) => {
      const current = source.current()
      if (!current.challengeActivation)
        return Promise.reject(
          new AttestationError(`${current.variant} attestation takes no activation request`),
        )
      return current.challengeActivation(request)
    },
  }
}
