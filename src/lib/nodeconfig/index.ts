/** The node config: what a node's `bootstrap run` and `verifyservice` read at start. */
import { isIP } from 'node:net'
import { validateNodeConfig } from '../../gen/schemas.js'
import type { AttestationVariant } from '../attestation/index.js'
import { nodePaths } from '../paths.js'
import { isHostPort } from '../system/index.js'
import type { TpmConfig } from '../tpm/index.js'
import { checkSchema, parseYaml, readYamlFile, throwIfProblems, type Problem } from '../yaml/index.js'
import { nodeConfigSchema } from './schema.js'

/** Same bound as the operator's config files: a node config is a few hundred bytes. */
const MAX_NODE_CONFIG_BYTES = 1024 * 1024

export { nodeConfigSchema }
export { readNodeState, writeNodeState } from './node-state.js'
export type { NodeState, NodeStateRole } from './node-state.js'

export type NodeRole = 'control-plane' | 'worker'
export interface NodeMember {
  name: string
  role: NodeRole
  vpcIP: string
}
export interface NodeConfig {
  attestationVariant: AttestationVariant
  tpm: TpmConfig
  root: string
  initServer: { listen: string }
  verifyService: { listen: string }
  /** Where control planes serve joins; a joining node dials this port on its control-plane peers. */
  joinService?: { listen: string }
  /** The control plane's key service (kms.API); its join service dials it. */
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
  metadata?: { provider: 'static'; self: NodeMember; peers: NodeMember[]; loadBalancerEndpoint?: string }
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
export type BootstrapperNodeConfig = NodeConfig & Required<Pick<NodeConfig, OptionalKey>>

export interface LoadNodeConfigOptions {
  /** Keys a particular command needs although the schema leaves them optional. */
  require?: readonly OptionalKey[]
}

export async function loadNodeConfig(file: string, opts: LoadNodeConfigOptions = {}): Promise<NodeConfig> {
  return parseNodeConfig(
    await readYamlFile(file, {
      what: 'node config',
      missingHint:
        'pass --config with the node config file (its keys are in the README, "Initialize a cluster")',
      maxBytes: MAX_NODE_CONFIG_BYTES,
    }),
    file,
    opts,
  )
}

/** The node config as `bootstrap run` loads it: the one rule set for reading and for writing one. */
export async function loadBootstrapperNodeConfig(file: string): Promise<BootstrapperNodeConfig> {
  return (await loadNodeConfig(file, { require: BOOTSTRAPPER_REQUIRED_KEYS })) as BootstrapperNodeConfig
}

export function parseBootstrapperNodeConfig(text: string, file: string): BootstrapperNodeConfig {
  return parseNodeConfig(text, file, { require: BOOTSTRAPPER_REQUIRED_KEYS }) as BootstrapperNodeConfig
}

export function parseNodeConfig(text: string, file: string, opts: LoadNodeConfigOptions = {}): NodeConfig {
  const source = parseYaml(text, file)
  const problems = checkSchema(validateNodeConfig, source.value)
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
  const tpm = raw.tpm as { swtpm?: unknown } | undefined
  checkHostPort(tpm?.swtpm, ['tpm', 'swtpm'])
  for (const service of ['initServer', 'verifyService', 'joinService', 'keyService', 'recoveryServer'])
    checkHostPort((raw[service] as { listen?: unknown } | undefined)?.listen, [service, 'listen'])
  const metadata = raw.metadata as
    | { self?: { vpcIP?: unknown }; peers?: Array<{ vpcIP?: unknown }>; loadBalancerEndpoint?: unknown }
    | undefined
  const checkIp = (value: unknown, path: Array<string | number>) => {
    if (typeof value === 'string' && isIP(value) === 0)
      problems.push({ path, message: `${JSON.stringify(value)} is not an IP address` })
  }
  checkIp(metadata?.self?.vpcIP, ['metadata', 'self', 'vpcIP'])
  if (Array.isArray(metadata?.peers))
    metadata.peers.forEach((p, i) => checkIp(p?.vpcIP, ['metadata', 'peers', i, 'vpcIP']))
  checkHostPort(metadata?.loadBalancerEndpoint, ['metadata', 'loadBalancerEndpoint'])
  return problems
}

function withDefaults(raw: Partial<NodeConfig> & Pick<NodeConfig, 'attestationVariant' | 'tpm'>): NodeConfig {
  const root = raw.root ?? '/'
  return {
    attestationVariant: raw.attestationVariant,
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
    metadata: raw.metadata ? { ...raw.metadata, peers: raw.metadata.peers ?? [] } : undefined,
  }
}
