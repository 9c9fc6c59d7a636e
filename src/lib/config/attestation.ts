/** Which attestation variant a workspace config asks for, and that variant's settings. */
import type { X509Certificate } from 'node:crypto'
import path from 'node:path'
import {
  measurementsFromConfig,
  readTrustRoots,
  type AttestationVariant,
  type Measurements,
  type SnpValidationPolicy,
  type TdxValidationPolicy,
} from '../attestation/index.js'
import { CliError } from '../errors/index.js'
import { formatPath, type KeyPath, type Problem } from '../yaml/index.js'
import { SNP_VARIANTS, TDX_VARIANTS, type SnpVariant, type TdxVariant } from './cvm-sections.js'
import {
  ATTESTATION_CONFIG_KEYS,
  type ClusterConfig,
  type MeasurementsConfig,
  type SnpAttestationConfig,
  type TdxAttestationConfig,
  type TpmEkAttestationConfig,
} from './types.js'

interface Configured<V extends AttestationVariant, S> {
  variant: V
  /** Its key under `attestation:`. */
  key: (typeof ATTESTATION_CONFIG_KEYS)[V]
  measurements: MeasurementsConfig
  /** The section as loaded (paths resolved by loadConfig). */
  section: S
  /** tpm-ek's manufacturer roots as the config lists them; empty for every other variant. */
  roots: string[]
}

export type ConfiguredAttestation =
  | Configured<'qemu-vtpm', { measurements: MeasurementsConfig }>
  | Configured<'tpm-ek', TpmEkAttestationConfig>
  | Configured<SnpVariant, SnpAttestationConfig>
  | Configured<TdxVariant, TdxAttestationConfig>

/** The schema allows one section under `attestation:`; without any, qemu-vtpm with no measurements. */
export function configuredAttestation(config: ClusterConfig): ConfiguredAttestation {
  const a = config.attestation
  if (a.tpmEK) return configured('tpm-ek', a.tpmEK, a.tpmEK.roots)
  for (const variant of SNP_VARIANTS) {
    const section = a[ATTESTATION_CONFIG_KEYS[variant]]
    if (section) return configured(variant, section)
  }
  for (const variant of TDX_VARIANTS) {
    const section = a[ATTESTATION_CONFIG_KEYS[variant]]
    if (section) return configured(variant, section)
  }
  return configured('qemu-vtpm', { measurements: a.qemuVTPM?.measurements ?? {} })
}

function configured<V extends AttestationVariant, S extends { measurements: MeasurementsConfig }>(
  variant: V,
  section: S,
  roots: string[] = [],
): Configured<V, S> {
  return {
    variant,
    key: ATTESTATION_CONFIG_KEYS[variant],
    measurements: section.measurements,
    section,
    roots,
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

/**
 * What an SEV-SNP validator checks, resolved from a section (the operator's or the node config's);
 * measurements are empty for a node config's section: the join service takes them from the join-config.
 */
export type SnpSettings = Omit<SnpValidationPolicy, 'kind'> & { measurements: Measurements }

/** What a TDX validator checks, resolved from a section; the collateral is read from its (absolute) folder. */
export type TdxSettings = Omit<TdxValidationPolicy, 'kind' | 'collateral' | 'acceptedTcbStatuses'> & {
  measurements: Measurements
  collateralDir?: string
}

type WithOptionalMeasurements<T> = Omit<T, 'measurements'> & { measurements?: MeasurementsConfig }

/**
 * An SNP section's settings; relative paths are from `baseDir` (loadConfig has already made them
 * absolute). Errors name the field, under `at` (e.g. `attestation.awsSEVSNP`).
 */
export function snpSettings(
  section: WithOptionalMeasurements<SnpAttestationConfig>,
  baseDir = process.cwd(),
  at: KeyPath = [],
): SnpSettings {
  const field = (name: string): KeyPath => [...at, name]
  return {
    measurements: measurementsFromConfig(section.measurements ?? {}),
    arks: certificates(section.amdRootKey, baseDir, field('amdRootKey')),
    ...(section.amdSigningKey !== undefined && {
      signingKeyPins: certificates(section.amdSigningKey, baseDir, field('amdSigningKey')),
    }),
    minimumTcb: {
      bootloader: section.bootloaderVersion,
      tee: section.teeVersion,
      snp: section.snpVersion,
      microcode: section.microcodeVersion,
    },
    ...optionalHex(section.launchMeasurement, 48, field('launchMeasurement'), 'launchMeasurement'),
    allowMigrationAgent: section.allowMigrationAgent ?? false,
    allowSmt: section.allowSMT ?? false,
  }
}

/** A TDX section's settings; relative paths (intelRootKey, collateral) are from `baseDir`. */
export function tdxSettings(
  section: WithOptionalMeasurements<TdxAttestationConfig>,
  baseDir = process.cwd(),
  at: KeyPath = [],
): TdxSettings {
  const field = (name: string): KeyPath => [...at, name]
  const rtmrs: Partial<Record<0 | 1 | 2 | 3, Buffer>> = {}
  for (const index of [0, 1, 2, 3] as const) {
    const value = section.rtmrs?.[String(index) as '0' | '1' | '2' | '3']
    if (value !== undefined) rtmrs[index] = hexBytes(value, 48, [...at, 'rtmrs', index])
  }
  return {
    measurements: measurementsFromConfig(section.measurements ?? {}),
    intelRoots: certificates(section.intelRootKey, baseDir, field('intelRootKey')),
    minimum: {
      qeSvn: section.qeSVN,
      pceSvn: section.pceSVN,
      teeTcbSvn: hexBytes(section.teeTCBSVN, 16, field('teeTCBSVN')),
    },
    ...optionalHex(section.qeVendorID, 16, field('qeVendorID'), 'qeVendorId'),
    ...optionalHex(section.mrSeam, 48, field('mrSeam'), 'mrSeam'),
    ...optionalHex(section.xfam, 8, field('xfam'), 'xfam'),
    ...optionalHex(section.tdAttributes, 8, field('tdAttributes'), 'tdAttributes'),
    ...optionalHex(section.mrTd, 48, field('mrTd'), 'mrTd'),
    ...(section.rtmrs !== undefined && { rtmrs }),
    ...(section.collateral !== undefined && { collateralDir: path.resolve(baseDir, section.collateral) }),
  }
}

function certificates(entry: string, baseDir: string, at: KeyPath): X509Certificate[] {
  try {
    return readTrustRoots(entry, baseDir)
  } catch (err: unknown) {
    throw new CliError(`${formatPath(at)}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    })
  }
}

function hexBytes(value: string, bytes: number, at: KeyPath): Buffer {
  if (!new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`).test(value))
    throw new CliError(`${formatPath(at)}: ${JSON.stringify(value)} is not ${bytes} bytes as hex`)
  return Buffer.from(value, 'hex')
}

function optionalHex<K extends string>(
  value: string | undefined,
  bytes: number,
  at: KeyPath,
  name: K,
): Partial<Record<K, Buffer>> {
  return value === undefined ? {} : ({ [name]: hexBytes(value, bytes, at) } as Partial<Record<K, Buffer>>)
}
