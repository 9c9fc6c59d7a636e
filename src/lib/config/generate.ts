/** `config generate`: a new config and state, never overwriting what is already there. */
import { randomBytes as nodeRandomBytes } from 'node:crypto'
import { rm } from 'node:fs/promises'
import type { AttestationVariant } from '../attestation/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { CliError, UsageError } from '../errors/index.js'
import { exists, isHostPort, writeSecretFile } from '../system/index.js'
import { workspacePaths } from '../paths.js'
import { resolveKubernetesVersion } from '../versions/index.js'
import { generateInitSecret } from '../kms/index.js'
import { configuredAttestation } from './attestation.js'
import { renderCvmConfig, snpSection, tdxSection } from './generate-cvm.js'
import {
  ATTESTATION_CONFIG_KEYS,
  CONFIG_VERSION,
  STATE_VERSION,
  type ClusterConfig,
  type ClusterState,
  type MeasurementsConfig,
} from './types.js'

/** PCRs every new config enforces; 15 must be zero so only never-bootstrapped nodes are trusted. */
export const DEFAULT_ENFORCED_PCRS = [4, 8, 9, 11, 12, 13, 15] as const

export const PROVIDERS = ['aws', 'gcp', 'azure', 'qemu'] as const
export type Provider = (typeof PROVIDERS)[number]

/** The variants each provider can attest with; the first is its default (as in Constellation). */
export const PROVIDER_VARIANTS: Readonly<Record<Provider, readonly AttestationVariant[]>> = {
  aws: ['aws-sev-snp'],
  gcp: ['gcp-sev-snp'],
  azure: ['azure-sev-snp', 'azure-tdx'],
  qemu: ['qemu-vtpm', 'tpm-ek', 'qemu-tdx'],
}

export interface GenerateOptions {
  workspace: string
  provider: Provider
  kubernetes: string
  /** The provider's default when absent. */
  variant?: AttestationVariant
  name: string
  endpoint: string
}

export interface GenerateResult {
  config: string
  state: string
  kubernetesVersion: string
}

export function defaultMeasurements(): MeasurementsConfig {
  const zero = '00'.repeat(32)
  return Object.fromEntries(
    DEFAULT_ENFORCED_PCRS.map((pcr) => [String(pcr), { expected: zero, warnOnly: false }]),
  )
}

export function defaultConfig(opts: Pick<GenerateOptions, 'kubernetes' | 'variant' | 'name'>): ClusterConfig {
  return {
    version: CONFIG_VERSION,
    name: opts.name,
    kubernetesVersion: resolveKubernetesVersion(opts.kubernetes),
    serviceCIDR: '10.96.0.0/12',
    attestation: defaultAttestation(opts.variant ?? 'qemu-vtpm'),
  }
}

function defaultAttestation(variant: AttestationVariant): ClusterConfig['attestation'] {
  const measurements = defaultMeasurements()
  const key = ATTESTATION_CONFIG_KEYS[variant]
  switch (variant) {
    case 'qemu-vtpm':
      return { [key]: { measurements } }
    case 'tpm-ek':
      // tpm-ek's roots start empty: only the operator knows which manufacturers to trust
      return { [key]: { measurements, roots: [] } }
    case 'aws-sev-snp':
    case 'gcp-sev-snp':
    case 'azure-sev-snp':
      return { [key]: snpSection(measurements) }
    case 'qemu-tdx':
    case 'azure-tdx':
      return { [key]: tdxSection(measurements) }
  }
}

/** The config file's text: the CVM sections carry comments on what to fill in. */
export function renderConfig(config: ClusterConfig): string {
  const { variant } = configuredAttestation(config)
  switch (variant) {
    case 'qemu-vtpm':
      return configHeader + stringifyYaml(config)
    case 'tpm-ek':
      return configHeader + tpmEkHeader + stringifyYaml(config)
    default:
      return configHeader + renderCvmConfig(config, variant)
  }
}

export function defaultState(
  name: string,
  endpoint: string,
  randomBytes: (n: number) => Buffer,
  initSecret: Buffer = generateInitSecret(),
): ClusterState {
  return {
    version: STATE_VERSION,
    infrastructure: {
      uid: randomBytes(4).toString('hex'),
      clusterEndpoint: endpoint,
      inClusterEndpoint: endpoint,
      initSecret: initSecret.toString('hex'),
      apiServerCertSANs: [],
      name,
      ipCidrNode: '10.42.0.0/16',
    },
    clusterValues: { clusterID: '', ownerID: '', measurementSalt: '' },
  }
}

export async function generateWorkspace(
  opts: GenerateOptions,
  randomBytes: (n: number) => Buffer = nodeRandomBytes,
): Promise<GenerateResult> {
  const variant = checkGenerateOptions(opts)
  const paths = workspacePaths(opts.workspace)
  for (const file of [paths.config, paths.state]) {
    if (await exists(file)) {
      throw new CliError(`${file} already exists`, {
        hint: 'remove it or use another workspace (-C); nothing was changed',
      })
    }
  }
  const config = defaultConfig({ ...opts, variant })
  const state = defaultState(opts.name, opts.endpoint, randomBytes)
  await writeSecretFile(paths.config, renderConfig(config), 'exclusive')
  try {
    await writeSecretFile(paths.state, stringifyYaml(state), 'exclusive')
  } catch (err) {
    await rm(paths.config, { force: true }) // we created it a moment ago; leave the workspace as we found it
    throw err
  }
  return { config: paths.config, state: paths.state, kubernetesVersion: config.kubernetesVersion }
}

const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,35}[a-z0-9])?$/

/** Flags become file content: refuse what `config validate` would refuse, before writing. */
function checkGenerateOptions(opts: GenerateOptions): AttestationVariant {
  const allowed = PROVIDER_VARIANTS[opts.provider]
  const variant = opts.variant ?? allowed[0] ?? 'qemu-vtpm'
  if (!allowed.includes(variant)) {
    throw new UsageError(
      `--attestation ${variant} is not available on ${opts.provider}; it allows ${allowed.join(', ')}`,
      `leave --attestation out for ${allowed[0]}, or name another provider`,
    )
  }
  if (!isHostPort(opts.endpoint)) {
    throw new UsageError(
      `--endpoint ${JSON.stringify(opts.endpoint)} is not a host or host:port (port 1-65535)`,
      'e.g. --endpoint 192.0.2.10 or --endpoint 192.0.2.10:9000',
    )
  }
  if (!CLUSTER_NAME.test(opts.name)) {
    throw new UsageError(
      `--name ${JSON.stringify(opts.name)} is not a cluster name`,
      'use lower-case letters, digits and dashes, at most 37 characters',
    )
  }
  return variant
}

const configHeader = `# Constellation cluster configuration. Schema: \`constellation config schema\`.
# Measurements: replace the expected PCR values with your node image's before \`init\`.
`
const tpmEkHeader = `# tpm-ek: list your TPM manufacturers' root CA certificates (PEM text or files) under attestation.tpmEK.roots.
`
