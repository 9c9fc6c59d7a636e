/** Which attestation variant a workspace config asks for, and that variant's settings. */
import type { X509Certificate } from 'node:crypto'
import { readTrustRoots, type AttestationVariant } from '../attestation/index.js'
import { CliError } from '../errors/index.js'
import { formatPath, type Problem } from '../yaml/index.js'
import {
  ATTESTATION_CONFIG_KEYS,
  type AttestationConfigKey,
  type ClusterConfig,
  type MeasurementsConfig,
} from './types.js'

export interface ConfiguredAttestation {
  variant: AttestationVariant
  /** Its key under `attestation:`. */
  key: AttestationConfigKey
  measurements: MeasurementsConfig
  /** tpm-ek's manufacturer roots as the config lists them; empty for qemu-vtpm. */
  roots: string[]
}

/** The schema allows one section under `attestation:`; without any, qemu-vtpm with no measurements. */
export function configuredAttestation(config: ClusterConfig): ConfiguredAttestation {
  const tpmEK = config.attestation.tpmEK
  if (tpmEK)
    return {
      variant: 'tpm-ek',
      key: ATTESTATION_CONFIG_KEYS['tpm-ek'],
      measurements: tpmEK.measurements,
      roots: tpmEK.roots,
    }
  return {
    variant: 'qemu-vtpm',
    key: ATTESTATION_CONFIG_KEYS['qemu-vtpm'],
    measurements: config.attestation.qemuVTPM?.measurements ?? {},
    roots: [],
  }
}

const ROOTS_PATH = ['attestation', ATTESTATION_CONFIG_KEYS['tpm-ek'], 'roots'] as const

/** Problems of attestation.tpmEK.roots, each at its list index; relative paths are from `baseDir`. */
export function trustRootProblems(roots: unknown, baseDir: string): Problem[] {
  if (!Array.isArray(roots)) return []
  const problems: Problem[] = []
  roots.forEach((entry: unknown, i) => {
    if (typeof entry !== 'string') return // the schema says so
    try {
      readTrustRoots(entry, baseDir)
    } catch (err: unknown) {
      problems.push({ path: [...ROOTS_PATH, i], message: err instanceof Error ? err.message : String(err) })
    }
  })
  return problems
}

/** The certificates of a loaded config's roots (paths already resolved by loadConfig). */
export function configTrustRoots(roots: readonly string[], baseDir = process.cwd()): X509Certificate[] {
  return roots.flatMap((entry, i) => {
    try {
      return readTrustRoots(entry, baseDir)
    } catch (err: unknown) {
      throw new CliError(
        `${formatPath([...ROOTS_PATH, i])}: ${err instanceof Error ? err.message : String(err)}`,
        {
          cause: err,
          hint: '`constellation config validate` lists every problem of the config',
        },
      )
    }
  })
}
