/** The validator an operator's config asks for. */
import {
  createValidator,
  measurementsFromConfig,
  requireMeasurements,
  type Validator,
} from '../attestation/index.js'
import type { Logger } from '../system/index.js'
import type { ClusterConfig } from './types.js'

/** Refuses a config without measurements: it would trust any node. */
export function validatorForConfig(config: ClusterConfig, log?: Logger): Validator {
  return createValidator(
    'qemu-vtpm',
    requireMeasurements(measurementsFromConfig(config.attestation.qemuVTPM?.measurements ?? {})),
    log,
  )
}
