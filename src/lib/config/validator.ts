/** The validator an operator's config asks for. */
import {
  createValidator,
  measurementsFromConfig,
  requireMeasurements,
  type Validator,
} from '../attestation/index.js'
import type { Logger } from '../system/index.js'
import { configTrustRoots, configuredAttestation } from './attestation.js'
import type { ClusterConfig } from './types.js'

/** Refuses a config without measurements (it would trust any node), and tpm-ek without roots. */
export function validatorForConfig(config: ClusterConfig, log?: Logger): Validator {
  const attestation = configuredAttestation(config)
  const measurements = requireMeasurements(measurementsFromConfig(attestation.measurements))
  if (attestation.variant === 'qemu-vtpm') return createValidator('qemu-vtpm', measurements, log)
  return createValidator('tpm-ek', measurements, log, { roots: configTrustRoots(attestation.roots) })
}
