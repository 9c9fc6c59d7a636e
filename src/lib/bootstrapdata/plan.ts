/** Builds the format-neutral plan of one machine's kubeadm user data (capi.md §3.2–3.4). Pure. */
import { USER_DATA_PATHS } from '../paths.js'
import { certificateFiles } from './certs.js'
import {
  clusterConfiguration,
  initConfiguration,
  joinConfiguration,
  renderKubeadmYaml,
  type JoinDiscovery,
} from './defaults.js'
import type {
  BootstrapPlan,
  BootstrapRole,
  BootstrapUser,
  CertificateAuthorities,
  Cluster,
  KubeadmConfigSpec,
  Machine,
  NodeFile,
} from './types.js'

export interface KubeadmPlanInput {
  role: BootstrapRole
  spec: KubeadmConfigSpec
  cluster: Cluster
  machine: Machine
  authorities: CertificateAuthorities
  /** Token discovery for joins (unused for init). */
  discovery?: JoinDiscovery
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>
}

export function kubeadmPlan(input: KubeadmPlanInput): BootstrapPlan {
  const { role, spec, cluster, machine } = input
  const version = machine.spec.version as string
  const clusterConfig = clusterConfiguration(spec, cluster, machine)
  let config: string
  if (role === 'init') {
    config = renderKubeadmYaml(version, [
      { kind: 'ClusterConfiguration', body: clusterConfig },
      { kind: 'InitConfiguration', body: initConfiguration(spec) },
    ])
  } else {
    if (!input.discovery) throw new Error('join plan without discovery data') // a caller bug, not user input
    const join = joinConfiguration(spec, role === 'control-plane-join', input.discovery)
    config = renderKubeadmYaml(version, [{ kind: 'JoinConfiguration', body: join }])
  }
  const certificatesDir =
    typeof clusterConfig.certificatesDir === 'string'
      ? clusterConfig.certificatesDir
      : USER_DATA_PATHS.certificatesDir
  const certFiles = role === 'worker-join' ? [] : certificateFiles(input.authorities, certificatesDir)
  return {
    ...commonPlan(spec, input.secrets),
    files: [...certFiles, ...userFiles(spec, input.secrets)],
    preCommands: spec.preKubeadmCommands ?? [],
    kubeadm: { phase: role === 'init' ? 'init' : 'join', config, verbosity: spec.verbosity },
    postCommands: spec.postKubeadmCommands ?? [],
  }
}

/** The parts of the spec every mode carries (attested data too): users, time, disks, boot commands. */
export function commonPlan(
  spec: KubeadmConfigSpec,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
): BootstrapPlan {
  return {
    files: [],
    bootCommands: spec.bootCommands ?? [],
    preCommands: [],
    postCommands: [],
    enableUnits: [],
    users: (spec.users ?? []).map((u) => resolveUser(u, secrets)),
    ntp: spec.ntp,
    diskSetup: spec.diskSetup,
    mounts: spec.mounts ?? [],
  }
}

/** User files with contentFrom resolved from the input's Secrets (validation made sure they exist). */
export function userFiles(
  spec: KubeadmConfigSpec,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
): NodeFile[] {
  return (spec.files ?? []).map((f) => ({
    path: f.path,
    content: f.contentFrom
      ? (secrets.get(f.contentFrom.secret.name)?.get(f.contentFrom.secret.key) ?? '')
      : (f.content ?? ''),
    encoding: f.encoding,
    owner: f.owner,
    permissions: f.permissions,
    append: f.append,
  }))
}

function resolveUser(
  user: BootstrapUser,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
): BootstrapUser {
  if (!user.passwdFrom) return user
  const { passwdFrom, ...rest } = user
  return { ...rest, passwd: secrets.get(passwdFrom.secret.name)?.get(passwdFrom.secret.key) }
}
