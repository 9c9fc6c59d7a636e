/**
 * Attested mode: instead of kubeadm with a token and CA keys, the user data installs a node config
 * and enables `constellation bootstrap run`, which gets its secrets only after attestation (the
 * InitServer for the first node, the JoinService for the rest), after `state-disk setup` prepared
 * the machine's state disk. So the user data holds nothing
 * secret: no token, no private key, no CA key. The init secret's bcrypt hash is in it (every node
 * runs the InitServer and checks the secret against it): the secret is ~190 random bits, so the
 * hash gives nothing away.
 *
 * The node config is written with the rules `bootstrap run` reads it with (one loader), so a
 * generated config that the node would refuse is an error here, not on the machine.
 */
import { CliError } from '../errors/index.js'
import { DEFAULT_INIT_SERVER_LISTEN, parseBootstrapperNodeConfig } from '../nodeconfig/index.js'
import { NODE_CONFIG_PATH, USER_DATA_PATHS } from '../paths.js'
import { YamlProblemsError, formatProblem, stringifyYaml } from '../yaml/index.js'
import { controlPlaneEndpoint } from './defaults.js'
import { isControlPlane } from './parse.js'
import { commonPlan, userFiles } from './plan.js'
import type { BootstrapPlan, Cluster, KubeadmConfigSpec, Machine, Origin } from './types.js'

/** In boot order: the state disk is set up (formatted, or reopened after a reboot) before the bootstrapper runs. */
export const NODE_UNITS = ['constellation-state-disk.service', 'constellation-bootstrapper.service']

/** The machine's state disk; `state-disk setup` formats it with a random key at its first boot. */
export interface StateDiskOptions {
  device: string
}
export const DEFAULT_STATE_DISK: StateDiskOptions = { device: USER_DATA_PATHS.stateDisk }

export interface AttestedPlanInput {
  spec: KubeadmConfigSpec
  cluster: Cluster
  machine: Machine & { origin: Origin }
  /** Every machine of the cluster, the machine itself included. */
  members: ReadonlyArray<Machine & { origin: Origin }>
  attestationVariant: string
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>
  initSecretHash: string
  stateDisk: StateDiskOptions
}

export function attestedPlan(input: AttestedPlanInput): BootstrapPlan {
  const nodeConfig = {
    attestationVariant: input.attestationVariant,
    tpm: { device: USER_DATA_PATHS.tpmDevice },
    root: '/',
    initServer: { listen: DEFAULT_INIT_SERVER_LISTEN },
    initSecretHash: input.initSecretHash,
    stateDisk: { device: input.stateDisk.device },
    metadata: {
      provider: 'static',
      self: member(input.machine),
      peers: input.members.filter((m) => m !== input.machine).map(member),
      loadBalancerEndpoint: controlPlaneEndpoint(input.cluster),
    },
  }
  const content = stringifyYaml(nodeConfig)
  checkLoads(content, input.machine)
  return {
    ...commonPlan(input.spec, input.secrets),
    files: [
      ...userFiles(input.spec, input.secrets),
      { path: NODE_CONFIG_PATH, content, owner: 'root:root', permissions: '0644' },
    ],
    enableUnits: [...NODE_UNITS],
  }
}

function checkLoads(content: string, machine: Machine & { origin: Origin }): void {
  try {
    parseBootstrapperNodeConfig(content, NODE_CONFIG_PATH)
  } catch (err) {
    if (!(err instanceof YamlProblemsError)) throw err
    const problems = err.problems.map((p) => `  ${formatProblem('node config', { ...p, line: undefined })}`)
    throw new CliError(
      `the node config for Machine "${machine.metadata.name}" would not load in bootstrap run:\n${problems.join('\n')}`,
      {
        exitCode: 2,
        hint: 'fix the value named (a flag: --attestation-variant, --state-disk; or the Machine/Cluster field it came from)',
      },
    )
  }
}

function member(machine: Machine & { origin: Origin }) {
  const ip = machine.status?.addresses?.find((a) => a.type === 'InternalIP')?.address
  if (!ip) {
    const at = machine.origin.line !== undefined ? `${machine.origin.file}:${machine.origin.line}: ` : ''
    throw new CliError(`${at}Machine "${machine.metadata.name}": status.addresses has no InternalIP`, {
      hint: 'attested data lists every node by its cluster-network IP: add status.addresses[{type: InternalIP, address: …}] to each Machine',
    })
  }
  return {
    name: machine.metadata.name,
    role: isControlPlane(machine) ? 'control-plane' : 'worker',
    vpcIP: ip,
  }
}
