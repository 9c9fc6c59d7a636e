/**
 * Attested mode: instead of kubeadm with a token and CA keys, the user data installs a node config
 * and enables `constellation bootstrap run`, which gets its secrets only after attestation (the
 * InitServer for the first node, the JoinService for the rest). So the user data holds nothing
 * secret: no token, no private key, no CA key.
 */
import { CliError } from '../errors/index.js'
import { DEFAULT_INIT_SERVER_LISTEN, NODE_CONFIG_PATH } from '../nodeconfig/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { controlPlaneEndpoint } from './defaults.js'
import { isControlPlane } from './parse.js'
import { commonPlan, userFiles } from './plan.js'
import type { BootstrapPlan, Cluster, KubeadmConfigSpec, Machine, Origin } from './types.js'

export const BOOTSTRAPPER_UNIT = 'constellation-bootstrapper.service'
export const DEFAULT_TPM_DEVICE = '/dev/tpmrm0'

export interface AttestedPlanInput {
  spec: KubeadmConfigSpec
  cluster: Cluster
  machine: Machine & { origin: Origin }
  /** Every machine of the cluster, the machine itself included. */
  members: ReadonlyArray<Machine & { origin: Origin }>
  attestationVariant: string
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>
}

export function attestedPlan(input: AttestedPlanInput): BootstrapPlan {
  const nodeConfig = {
    attestationVariant: input.attestationVariant,
    tpm: { device: DEFAULT_TPM_DEVICE },
    root: '/',
    initServer: { listen: DEFAULT_INIT_SERVER_LISTEN },
    metadata: {
      provider: 'static',
      self: member(input.machine),
      peers: input.members.filter((m) => m !== input.machine).map(member),
      loadBalancerEndpoint: controlPlaneEndpoint(input.cluster),
    },
  }
  return {
    ...commonPlan(input.spec, input.secrets),
    files: [
      ...userFiles(input.spec, input.secrets),
      { path: NODE_CONFIG_PATH, content: stringifyYaml(nodeConfig), owner: 'root:root', permissions: '0644' },
    ],
    enableUnits: [BOOTSTRAPPER_UNIT],
  }
}

function member(machine: Machine & { origin: Origin }) {
  const ip = machine.status?.addresses?.find((a) => a.type === 'InternalIP')?.address
  if (!ip) {
    const at = machine.origin.line !== undefined ? `${machine.origin.file}:${machine.origin.line}: ` : ''
    throw new CliError(
      `${at}Machine "${machine.metadata.name}": status.addresses has no InternalIP`,
      1,
      'attested data lists every node by its cluster-network IP: add status.addresses[{type: InternalIP, address: …}] to each Machine',
    )
  }
  return {
    name: machine.metadata.name,
    role: isControlPlane(machine) ? 'control-plane' : 'worker',
    vpcIP: ip,
  }
}
