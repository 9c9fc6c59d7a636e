/** Loading and checking the workspace config and state: strict keys, positions in every error. */
import { isIP } from 'node:net'
import path from 'node:path'
import { validateConfig, validateState } from '../../gen/schemas.js'
import { INIT_SECRET_LENGTH, MIN_INIT_SECRET_BYTES } from '../kms/index.js'
import {
  isPatchRelease,
  isSupportedVersion,
  parseKubernetesVersion,
  resolveKubernetesVersion,
  supportedVersions,
} from '../versions/index.js'
import { parseYaml, readYamlFile, throwIfProblems, type Problem, type YamlSource } from '../yaml/index.js'
import { checkSchema } from '../yaml/index.js'
import { exists, isHostPort } from '../system/index.js'
import { trustRootProblems } from './attestation.js'
import { explainHexProblem } from './attestation-schema.js'
import { cvmSectionProblems, resolveCvmPaths, SNP_KEYS, TDX_KEYS } from './cvm-sections.js'
import { measurementsKeyProblems } from './measurements-key.js'
import type { ClusterConfig, ClusterState } from './types.js'

const WORKSPACE_HINT = 'run `constellation config generate qemu` first, or pass -C <workspace>'

/** The largest config, state or node config file read; generated ones are a few KB. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024

/** Reads a config file; `missingHint` says what to do when it is absent. */
export async function readConfigFile(
  file: string,
  what: string,
  missingHint = WORKSPACE_HINT,
): Promise<string> {
  return readYamlFile(file, { what, missingHint, maxBytes: MAX_CONFIG_FILE_BYTES })
}

export async function loadConfig(file: string): Promise<ClusterConfig> {
  return parseConfig(await readConfigFile(file, 'config'), file)
}

export async function loadState(file: string): Promise<ClusterState> {
  return parseState(await readConfigFile(file, 'state'), file)
}

/** The workspace's config when it has one (upgrade can do without). */
export async function loadConfigIfPresent(file: string): Promise<ClusterConfig | undefined> {
  return (await exists(file)) ? loadConfig(file) : undefined
}

/** The workspace's state when it has one (verify and upgrade can do without). */
export async function loadStateIfPresent(file: string): Promise<ClusterState | undefined> {
  return (await exists(file)) ? loadState(file) : undefined
}

export function parseConfig(text: string, file: string): ClusterConfig {
  return checkConfig(parseYaml(text, file))
}

/** Schema and semantic checks of a parsed config; throws every problem, located. */
export function checkConfig(source: YamlSource): ClusterConfig {
  const problems = checkSchema(validateConfig, source.value).map(explainHexProblem)
  const baseDir = path.dirname(path.resolve(source.file))
  problems.push(...checkConfigSemantics(source.value, baseDir))
  throwIfProblems(source, problems)
  return withConfigDefaults(source.value as ClusterConfig, baseDir)
}

export function parseState(text: string, file: string): ClusterState {
  const source: YamlSource = parseYaml(text, file)
  const problems = checkSchema(validateState, source.value)
  problems.push(...checkStateSemantics(source.value))
  throwIfProblems(source, problems)
  return withStateDefaults(source.value as ClusterState)
}

// Semantic checks run even when the schema found problems, so one run reports everything;
// they look only at values of the right type and leave the rest to the schema's messages.
function checkConfigSemantics(value: unknown, baseDir: string): Problem[] {
  const problems: Problem[] = []
  if (!isRecord(value)) return problems
  const version = value.kubernetesVersion
  if (typeof version !== 'string') {
    // reported by the schema
  } else if (!isPatchRelease(parseKubernetesVersion(version))) {
    problems.push({
      path: ['kubernetesVersion'],
      message: `${JSON.stringify(version)} must name a patch release; supported versions are ${supportedVersions().join(', ')}`,
    })
  } else {
    try {
      resolveKubernetesVersion(version)
    } catch (err) {
      problems.push({ path: ['kubernetesVersion'], message: (err as Error).message })
    }
  }
  if (typeof value.serviceCIDR === 'string' && !isCidr(value.serviceCIDR)) {
    problems.push({
      path: ['serviceCIDR'],
      message: `${JSON.stringify(value.serviceCIDR)} is not a CIDR like 10.96.0.0/12`,
    })
  }
  problems.push(...componentProblems(value.kubernetesComponents))
  const attestation = isRecord(value.attestation) ? value.attestation : {}
  if (isRecord(attestation.tpmEK)) problems.push(...trustRootProblems(attestation.tpmEK.roots, baseDir))
  problems.push(...cvmSectionProblems(attestation, baseDir, ['attestation']))
  problems.push(...measurementsKeyProblems(value.measurementsPublicKey, baseDir))
  return problems
}

// The node installs what the config lists: without a hash it would install unverified bytes,
// and a path that is relative or climbs out with `..` must fail here, not after the node lock.
function componentProblems(components: unknown): Problem[] {
  if (!Array.isArray(components)) return []
  const problems: Problem[] = []
  components.forEach((component: unknown, i) => {
    if (!isRecord(component)) return
    const { hash, installPath } = component
    if (hash === undefined || hash === '') {
      problems.push({
        path: ['kubernetesComponents', i, 'hash'],
        message: 'is required: sha256:<64 hex digits>',
      })
    }
    if (typeof installPath === 'string' && !isCleanAbsolutePath(installPath)) {
      problems.push({
        path: ['kubernetesComponents', i, 'installPath'],
        message: `${JSON.stringify(installPath)} must be an absolute, normalized path without ".." (e.g. /run/state/bin/kubeadm)`,
      })
    }
  })
  return problems
}

function isCleanAbsolutePath(p: string): boolean {
  return (
    p.startsWith('/') &&
    p.length > 1 &&
    !p.endsWith('/') &&
    path.posix.normalize(p) === p &&
    !p.split('/').includes('..')
  )
}

/** Warnings (not errors): a config that loads but would not yet protect anything. */
export function configWarnings(config: ClusterConfig): Problem[] {
  const warnings: Problem[] = []
  for (const [key, entry] of Object.entries(config.attestation)) {
    // PCR 15 is zero on purpose (a never-bootstrapped node); the others are zero only as placeholders
    const measured = Object.entries(entry?.measurements ?? {}).filter(([pcr]) => pcr !== '15')
    if (measured.length > 0 && measured.every(([, m]) => /^0+$/.test(m.expected))) {
      warnings.push({
        path: ['attestation', key, 'measurements'],
        message:
          "are still the all-zero placeholders: no real node will pass attestation; put your node image's values here (`constellation config measurements` reads them from a node you trust)",
      })
    }
  }
  warnings.push(...cvmWarnings(config.attestation))
  if (config.attestation.tpmEK?.roots.length === 0)
    warnings.push({
      path: ['attestation', 'tpmEK', 'roots'],
      message:
        "is empty: no TPM will pass attestation; list your TPM manufacturers' root CA certificates (PEM text or files)",
    })
  return warnings
}

/** What a CVM section leaves unchecked that the operator is expected to pin. */
function cvmWarnings(attestation: ClusterConfig['attestation']): Problem[] {
  const warnings: Problem[] = []
  for (const [key, value] of Object.entries(attestation)) {
    const section = value as Record<string, unknown>
    if (SNP_KEYS.includes(key) && section.launchMeasurement === undefined)
      warnings.push({
        path: ['attestation', key],
        message:
          "has no launchMeasurement: any guest firmware passes the SEV-SNP check; put your image's 48-byte launch measurement there",
      })
    if (TDX_KEYS.includes(key) && section.mrTd === undefined)
      warnings.push({
        path: ['attestation', key],
        message:
          "has no mrTd: any TD firmware passes the TDX check; put your image's MRTD there (and its RTMRs under rtmrs)",
      })
  }
  return warnings
}

function checkStateSemantics(value: unknown): Problem[] {
  const problems: Problem[] = []
  const infra = isRecord(value) ? value.infrastructure : undefined
  // upgrade takes the API server host from either endpoint, so both must be readable
  for (const key of ['clusterEndpoint', 'inClusterEndpoint']) {
    const endpoint = isRecord(infra) ? infra[key] : undefined
    if (typeof endpoint === 'string' && endpoint !== '' && !isHostPort(endpoint)) {
      problems.push({
        path: ['infrastructure', key],
        message: `${JSON.stringify(endpoint)} is not a host or host:port`,
      })
    }
  }
  // The node's bcrypt hash of it has a low cost because the secret itself is long and random
  // (src/lib/kms/init-secret.ts); a short hand-written one would not hold up to guessing.
  const secret = isRecord(infra) ? infra.initSecret : undefined
  if (
    typeof secret === 'string' &&
    /^([0-9a-fA-F]{2})+$/.test(secret) &&
    secret.length < 2 * MIN_INIT_SECRET_BYTES
  ) {
    problems.push({
      path: ['infrastructure', 'initSecret'],
      message: `is ${secret.length / 2} bytes; an init secret needs at least ${MIN_INIT_SECRET_BYTES} random bytes (config generate makes ${INIT_SECRET_LENGTH})`,
    })
  }
  return problems
}

function withConfigDefaults(config: ClusterConfig, baseDir: string): ClusterConfig {
  const tpmEK = config.attestation.tpmEK
  // a root file is named relative to the config, wherever the CLI runs from
  const resolved = Object.fromEntries(
    Object.entries(config.attestation).map(([key, section]) => [key, resolveCvmPaths(key, section, baseDir)]),
  ) as ClusterConfig['attestation']
  const attestation = tpmEK
    ? {
        ...resolved,
        tpmEK: {
          ...tpmEK,
          roots: tpmEK.roots.map((r) => (r.includes('-----BEGIN') ? r : path.resolve(baseDir, r))),
        },
      }
    : resolved
  const kubernetesVersion = config.kubernetesVersion.startsWith('v')
    ? config.kubernetesVersion
    : `v${config.kubernetesVersion}`
  return {
    ...config,
    attestation,
    kubernetesVersion: isSupportedVersion(kubernetesVersion)
      ? kubernetesVersion
      : resolveKubernetesVersion(kubernetesVersion),
    serviceCIDR: config.serviceCIDR ?? '10.96.0.0/12',
  }
}

function withStateDefaults(state: ClusterState): ClusterState {
  const i = state.infrastructure
  return {
    version: state.version,
    infrastructure: {
      uid: i.uid ?? '',
      clusterEndpoint: i.clusterEndpoint,
      inClusterEndpoint: i.inClusterEndpoint ?? '',
      initSecret: i.initSecret,
      apiServerCertSANs: i.apiServerCertSANs ?? [],
      name: i.name,
      ipCidrNode: i.ipCidrNode ?? '',
    },
    clusterValues: {
      clusterID: state.clusterValues.clusterID ?? '',
      ownerID: state.clusterValues.ownerID ?? '',
      measurementSalt: state.clusterValues.measurementSalt ?? '',
    },
  }
}

export function isCidr(value: string): boolean {
  const [ip, bits, extra] = value.split('/')
  if (extra !== undefined || ip === undefined || bits === undefined || !/^\d+$/.test(bits)) return false
  const family = isIP(ip)
  return family !== 0 && Number(bits) <= (family === 4 ? 32 : 128)
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
