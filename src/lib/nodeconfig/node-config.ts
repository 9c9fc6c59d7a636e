/** The node config: what a node's `bootstrap run` and `verifyservice` read at start. */
import { isIP } from 'node:net'
import { validateNodeConfig } from '../../gen/schemas.js'
import type { AttestationVariant } from '../attestation/index.js'
import { explainHexProblem } from '../config/index.js'
import { nodePaths } from '../paths.js'
import { isHostPort, unixAddressProblem, unixSocketPath, type RetryOptions } from '../system/index.js'
import type { TpmConfig } from '../tpm/index.js'
import {
  checkSchema,
  parseYaml,
  readYamlFile,
  throwIfProblems,
  type Problem,
  type YamlSource,
} from '../yaml/index.js'
import {
  httpMetadataClient,
  resolveMetadata,
  type MetadataClient,
  type ResolvedNodeConfig,
} from './metadata.js'
import { nodeAttestationProblems, type NodeAttestationConfig } from './attestation.js'
import { nodeConfigSchema } from './schema.js'

/** Same bound as the operator's config files: a node config is a few hundred bytes. */
const MAX_NODE_CONFIG_BYTES = 1024 * 1024

export { nodeConfigSchema }

export type NodeRole = 'control-plane' | 'worker'
export interface NodeMember {
  name: string
  role: NodeRole
  vpcIP: string
}
export interface NodeConfig {
  attestationVariant: AttestationVariant
  /**
   * The variant's settings the join service validates joins with (tpm-ek: manufacturer roots; the
   * CVM variants: their sections, as in the operator's config but without measurements).
   */
  attestation?: NodeAttestationConfig
  tpm: TpmConfig
  root: string
  initServer: { listen: string }
  verifyService: { listen: string }
  /** Where control planes serve joins; a joining node dials this port on its control-plane peers. */
  joinService?: { listen: string }
  /** The control plane's key service (kms.API); its join service dials it. HOST:PORT or unix:/path. */
  keyService: { listen: string }
  /** How the join service reaches the Kubernetes API (tokens, join-config, the control-plane lease). */
  kubeconfig: string
  initSecretHash?: string
  kubeadm: string
  /** Where a rebooted node that waits for its disk key serves `constellation recover`. */
  recoveryServer: { listen: string }
  stateDisk?: {
    device: string
    /** Keyslot cost for the derived key; tests lower it (cryptsetup's default otherwise). */
    pbkdf?: { type: 'pbkdf2' | 'argon2id'; iterations: number }
  }
  metadata?: StaticMetadata | HttpMetadata
}

/** Who this node is, its peers and the cluster's endpoint, as the node config states them. */
export interface StaticMetadata {
  provider: 'static'
  self: NodeMember
  peers: NodeMember[]
  loadBalancerEndpoint?: string
}

/**
 * Static metadata as a daemon holds it after resolveMetadata: from an http provider it also says
 * where to ask again (the join service follows the cluster's membership) and which address this
 * node's requests leave from.
 */
export interface ResolvedMetadata extends StaticMetadata {
  service?: { url: string; sourceAddress?: string }
}

/** The same, fetched at start from a metadata service (resolveMetadata). */
export interface HttpMetadata {
  provider: 'http'
  url: string
  /** The address requests leave from, when the host has several (one loopback address per node). */
  sourceAddress?: string
}

/** Kubernetes node names are lower case, without underscores (as Constellation derives them). */
export const kubernetesNodeName = (name: string): string => name.toLowerCase().replaceAll('_', '-')

export const DEFAULT_INIT_SERVER_LISTEN = '0.0.0.0:9000'
export const DEFAULT_VERIFY_SERVICE_LISTEN = '0.0.0.0:30081'
/** Constellation's JoinServiceNodePort. */
export const DEFAULT_JOIN_SERVICE_LISTEN = '0.0.0.0:30090'
/** Constellation's KeyServicePort, on loopback: the key service authenticates no caller. */
export const DEFAULT_KEY_SERVICE_LISTEN = '127.0.0.1:9000'
/** Constellation's RecoveryPort. */
export const DEFAULT_RECOVERY_SERVER_LISTEN = '0.0.0.0:9999'

type OptionalKey = 'initSecretHash' | 'stateDisk' | 'metadata'

/** What `bootstrap run` needs beyond the schema; every node config the project writes must have it. */
export const BOOTSTRAPPER_REQUIRED_KEYS: readonly OptionalKey[] = ['initSecretHash', 'stateDisk', 'metadata']
/** A node config as `bootstrap run` reads it: the metadata may still name a service to ask. */
export type BootstrapperNodeConfigFile = NodeConfig & Required<Pick<NodeConfig, OptionalKey>>
/** ... and as the bootstrapper uses it, its metadata resolved. */
export type BootstrapperNodeConfig = Omit<BootstrapperNodeConfigFile, 'metadata'> & {
  metadata: ResolvedMetadata
}

export interface LoadNodeConfigOptions {
  /** Keys a particular command needs although the schema leaves them optional. */
  require?: readonly OptionalKey[]
}

const NODE_CONFIG_READ = {
  what: 'node config',
  missingHint: 'pass --config with the node config file (its keys are in the README, "Initialize a cluster")',
  maxBytes: MAX_NODE_CONFIG_BYTES,
}

export async function loadNodeConfig(file: string, opts: LoadNodeConfigOptions = {}): Promise<NodeConfig> {
  return parseNodeConfig(await readYamlFile(file, NODE_CONFIG_READ), file, opts)
}

/**
 * The node config as `bootstrap run` loads it: the one rule set for reading and for writing one.
 * With an http metadata provider, this node, its peers, the endpoint (and the init secret's hash,
 * unless the file gives it) come from the metadata service.
 */
export async function loadBootstrapperNodeConfig(
  file: string,
  metadata: MetadataClient = httpMetadataClient(),
): Promise<BootstrapperNodeConfig> {
  const config = parseBootstrapperFile(await readYamlFile(file, NODE_CONFIG_READ), file)
  // parsing required metadata, and the init secret's hash unless the service gives it
  return (await resolveMetadata(config, metadata)) as BootstrapperNodeConfig
}

/** Any daemon's node config, its metadata (when it has any) resolved as `bootstrap run` does. */
export async function loadResolvedNodeConfig(
  file: string,
  opts: LoadNodeConfigOptions & { onMetadataRetry?: RetryOptions['onRetry'] } = {},
  metadata: MetadataClient = httpMetadataClient(),
): Promise<ResolvedNodeConfig> {
  return resolveMetadata(await loadNodeConfig(file, opts), metadata, { onRetry: opts.onMetadataRetry })
}

export function parseBootstrapperNodeConfig(text: string, file: string): BootstrapperNodeConfigFile {
  return parseBootstrapperFile(text, file)
}

/** The init secret's hash may come from an http metadata service instead. */
function parseBootstrapperFile(text: string, file: string): BootstrapperNodeConfigFile {
  const source = parseYaml(text, file)
  const raw = source.value as { metadata?: { provider?: unknown } } | undefined
  const fromService = raw?.metadata?.provider === 'http'
  const require = BOOTSTRAPPER_REQUIRED_KEYS.filter((k) => !(fromService && k === 'initSecretHash'))
  return checkNodeConfig(source, { require }) as BootstrapperNodeConfigFile
}

export function parseNodeConfig(text: string, file: string, opts: LoadNodeConfigOptions = {}): NodeConfig {
  return checkNodeConfig(parseYaml(text, file), opts)
}

/** The node config from its parsed YAML: schema, required keys, semantics, defaults. */
function checkNodeConfig(source: YamlSource, opts: LoadNodeConfigOptions): NodeConfig {
  const problems = checkSchema(validateNodeConfig, source.value).map(explainHexProblem)
  const raw = (typeof source.value === 'object' && source.value !== null ? source.value : {}) as Record<
    string,
    unknown
  >
  for (const key of opts.require ?? []) {
    if (raw[key] === undefined) problems.push({ path: [key], message: 'required key is missing' })
  }
  problems.push(...semanticProblems(raw))
  throwIfProblems(source, problems)
  return withDefaults(raw as unknown as Partial<NodeConfig> & Pick<NodeConfig, 'attestationVariant' | 'tpm'>)
}

function semanticProblems(raw: Record<string, unknown>): Problem[] {
  const problems: Problem[] = []
  const checkHostPort = (value: unknown, path: string[]) => {
    if (typeof value === 'string' && !isHostPort(value, { requirePort: true }))
      problems.push({ path, message: `${JSON.stringify(value)} is not HOST:PORT` })
  }
  // the node's own services (its TPM, its key service) may sit on a unix socket only it can use
  const checkLocalAddress = (value: unknown, path: string[]) => {
    if (typeof value !== 'string' || unixSocketPath(value) === undefined) return checkHostPort(value, path)
    const problem = unixAddressProblem(value)
    if (problem) problems.push({ path, message: problem })
  }
  const tpm = raw.tpm as { swtpm?: unknown } | undefined
  checkLocalAddress(tpm?.swtpm, ['tpm', 'swtpm'])
  checkLocalAddress((raw.keyService as { listen?: unknown } | undefined)?.listen, ['keyService', 'listen'])
  for (const service of ['initServer', 'verifyService', 'joinService', 'recoveryServer'])
    checkHostPort((raw[service] as { listen?: unknown } | undefined)?.listen, [service, 'listen'])
  const metadata = raw.metadata as
    | {
        provider?: unknown
        url?: unknown
        self?: { vpcIP?: unknown }
        peers?: Array<{ vpcIP?: unknown }>
        loadBalancerEndpoint?: unknown
        sourceAddress?: unknown
      }
    | undefined
  problems.push(...metadataProviderProblems(metadata))
  const checkIp = (value: unknown, path: Array<string | number>) => {
    if (typeof value === 'string' && isIP(value) === 0)
      problems.push({ path, message: `${JSON.stringify(value)} is not an IP address` })
  }
  checkIp(metadata?.self?.vpcIP, ['metadata', 'self', 'vpcIP'])
  checkIp(metadata?.sourceAddress, ['metadata', 'sourceAddress'])
  if (Array.isArray(metadata?.peers))
    metadata.peers.forEach((p, i) => checkIp(p?.vpcIP, ['metadata', 'peers', i, 'vpcIP']))
  checkHostPort(metadata?.loadBalancerEndpoint, ['metadata', 'loadBalancerEndpoint'])
  problems.push(...nodeAttestationProblems(raw))
  return problems
}

/** static states everything and names no service; http names only the service. */
function metadataProviderProblems(
  metadata: { provider?: unknown; url?: unknown; [key: string]: unknown } | undefined,
): Problem[] {
  if (!metadata) return []
  const problems: Problem[] = []
  if (metadata.provider === 'http') {
    if (metadata.url === undefined)
      problems.push({ path: ['metadata', 'url'], message: 'required with provider http' })
    else if (typeof metadata.url === 'string' && !/^https?:\/\/[^/\s]+\/?$/.test(metadata.url))
      problems.push({
        path: ['metadata', 'url'],
        message: `${JSON.stringify(metadata.url)} is not http(s)://HOST[:PORT]`,
      })
    for (const key of ['self', 'peers', 'loadBalancerEndpoint'])
      if (metadata[key] !== undefined)
        problems.push({
          path: ['metadata', key],
          message: 'comes from the metadata service with provider http; remove it',
        })
  } else if (metadata.provider === 'static') {
    if (metadata.self === undefined)
      problems.push({ path: ['metadata', 'self'], message: 'required with provider static' })
    if (metadata.url !== undefined)
      problems.push({ path: ['metadata', 'url'], message: 'only provider http asks a metadata service' })
    if (metadata.sourceAddress !== undefined)
      problems.push({
        path: ['metadata', 'sourceAddress'],
        message: 'only provider http asks a metadata service',
      })
  }
  return problems
}

function withDefaults(raw: Partial<NodeConfig> & Pick<NodeConfig, 'attestationVariant' | 'tpm'>): NodeConfig {
  const root = raw.root ?? '/'
  return {
    attestationVariant: raw.attestationVariant,
    ...(raw.attestation && { attestation: raw.attestation }),
    tpm: raw.tpm,
    root,
    initServer: { listen: raw.initServer?.listen ?? DEFAULT_INIT_SERVER_LISTEN },
    verifyService: { listen: raw.verifyService?.listen ?? DEFAULT_VERIFY_SERVICE_LISTEN },
    joinService: { listen: raw.joinService?.listen ?? DEFAULT_JOIN_SERVICE_LISTEN },
    keyService: { listen: raw.keyService?.listen ?? DEFAULT_KEY_SERVICE_LISTEN },
    recoveryServer: { listen: raw.recoveryServer?.listen ?? DEFAULT_RECOVERY_SERVER_LISTEN },
    kubeconfig: raw.kubeconfig ?? nodePaths(root).adminConf,
    initSecretHash: raw.initSecretHash,
    kubeadm: raw.kubeadm ?? nodePaths(root).kubeadm,
    stateDisk: raw.stateDisk,
    metadata:
      raw.metadata?.provider === 'static'
        ? { ...raw.metadata, peers: raw.metadata.peers ?? [] }
        : raw.metadata,
  }
}
