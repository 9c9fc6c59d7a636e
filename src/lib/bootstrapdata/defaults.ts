/**
 * Fills a KubeadmConfigSpec from its Cluster and Machine (capi.md §2.1) and serializes the kubeadm
 * configuration in the API version its Kubernetes version needs (§2.4). Pure.
 */
import { formatHostPort } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'
import {
  isSupportedVersion,
  kubeadmApiVersion,
  kubernetesMinor,
  parseKubernetesVersion,
  supportedVersions,
} from '../versions/index.js'
import { dropEmpty } from './drop-undefined.js'
import type { Cluster, KubeadmConfigSpec, KubeadmObject, Machine } from './types.js'
import { record } from './validate.js'

export const UNINITIALIZED_TAINT = { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }

/**
 * What is wrong with a Machine's Kubernetes version; undefined if nothing. Only the versions this
 * tool pins (src/lib/versions) are served: kubeadm data for any other would install what nobody
 * has checked (and v1.21 and older cannot read the kubeadm API versions rendered here at all).
 */
export function kubernetesVersionProblem(version: string): string | undefined {
  if (isSupportedVersion(version)) return undefined
  const supported = supportedVersions()
  const list = `supported: ${supported.join(', ')}`
  if (parseKubernetesVersion(version)?.patch === undefined)
    return `${JSON.stringify(version)} is not a Kubernetes version like v1.31.13; ${list}`
  const minor = kubernetesMinor(version)
  const sameMinor = supported.find((v) => kubernetesMinor(v) === minor)
  const hint = sameMinor ? ` (the supported patch of ${minor} is ${sameMinor})` : ''
  return `Kubernetes ${version} is not supported${hint}; ${list}`
}

export function controlPlaneEndpoint(cluster: Cluster): string | undefined {
  const ep = cluster.spec?.controlPlaneEndpoint
  if (!ep?.host || !ep.port) return undefined
  return formatHostPort(ep.host, ep.port)
}

/** ClusterConfiguration with the values injected from the Cluster and Machine; user values win. */
export function clusterConfiguration(
  spec: KubeadmConfigSpec,
  cluster: Cluster,
  machine: Machine,
): KubeadmObject {
  const given = spec.clusterConfiguration ?? {}
  const networking = { ...(record(given.networking) ?? {}) }
  const net = cluster.spec?.clusterNetwork
  networking.dnsDomain ??= net?.serviceDomain
  networking.serviceSubnet ??= net?.services?.cidrBlocks?.join(',')
  networking.podSubnet ??= net?.pods?.cidrBlocks?.join(',')
  return dropEmpty({
    ...given,
    controlPlaneEndpoint: given.controlPlaneEndpoint ?? controlPlaneEndpoint(cluster),
    clusterName: given.clusterName ?? cluster.metadata.name,
    kubernetesVersion: given.kubernetesVersion ?? machine.spec.version,
    networking: dropEmpty(networking),
  })
}

export function initConfiguration(spec: KubeadmConfigSpec): KubeadmObject {
  const given = spec.initConfiguration ?? {}
  return { ...given, nodeRegistration: withPullPolicy(given.nodeRegistration) }
}

export interface JoinDiscovery {
  apiServerEndpoint: string
  token: string
  caCertHashes: string[]
}

/** JoinConfiguration with token discovery filled in (unless the user chose file discovery). */
export function joinConfiguration(
  spec: KubeadmConfigSpec,
  controlPlane: boolean,
  discovery: JoinDiscovery,
): KubeadmObject {
  const given = spec.joinConfiguration ?? {}
  const out: KubeadmObject = { ...given }
  const givenDiscovery = record(given.discovery) ?? {}
  if (givenDiscovery.file === undefined) {
    const token = record(givenDiscovery.bootstrapToken) ?? {}
    const hashes =
      Array.isArray(token.caCertHashes) && token.caCertHashes.length > 0
        ? token.caCertHashes
        : discovery.caCertHashes
    out.discovery = {
      ...givenDiscovery,
      bootstrapToken: dropEmpty({
        ...token,
        apiServerEndpoint: token.apiServerEndpoint ?? discovery.apiServerEndpoint,
        token: token.token ?? discovery.token,
        caCertHashes: hashes,
        unsafeSkipCAVerification: hashes.length === 0 ? true : token.unsafeSkipCAVerification,
      }),
    }
  }
  const registration = withPullPolicy(given.nodeRegistration)
  if (controlPlane) out.controlPlane = given.controlPlane ?? {}
  else {
    // The taint keeps workloads off until CAPI's machine controller clears it; a copy, never the input.
    const taints = Array.isArray(registration.taints) ? registration.taints : []
    registration.taints = [...taints, UNINITIALIZED_TAINT]
  }
  out.nodeRegistration = registration
  return out
}

/** The user's bootstrap token from the spec, if any: then no token is generated. */
export function givenJoinToken(spec: KubeadmConfigSpec): string | undefined {
  const token = record(record(spec.joinConfiguration?.discovery)?.bootstrapToken)?.token
  return typeof token === 'string' && token !== '' ? token : undefined
}

export function usesFileDiscovery(spec: KubeadmConfigSpec): boolean {
  return record(spec.joinConfiguration?.discovery)?.file !== undefined
}

/** Serializes kubeadm objects as one YAML stream, each with apiVersion and kind, keys sorted. */
export function renderKubeadmYaml(
  version: string,
  docs: ReadonlyArray<{ kind: string; body: KubeadmObject }>,
): string {
  const apiVersion = kubeadmApiVersion(version)
  const v1beta4 = apiVersion.endsWith('v1beta4')
  const timeout = docs
    .map((d) => record(d.body.apiServer)?.timeoutForControlPlane)
    .find((t) => t !== undefined)
  return docs
    .map(({ kind, body }) => {
      let converted: KubeadmObject = { ...body, apiVersion, kind }
      if (v1beta4) converted = toV1beta4(converted, kind, timeout)
      return `---\n${stringifyYaml(sortKeys(converted))}`
    })
    .join('')
}

// v1beta4 turns argument maps into {name, value} lists and moves the timeouts under `timeouts`.
function toV1beta4(obj: KubeadmObject, kind: string, timeout: unknown): KubeadmObject {
  const out = mapArgs(obj) as KubeadmObject
  const discovery = record(out.discovery)
  if (kind === 'JoinConfiguration' && discovery?.timeout !== undefined) {
    const { timeout: discoveryTimeout, ...rest } = discovery
    out.discovery = rest
    out.timeouts = { ...(record(out.timeouts) ?? {}), discovery: discoveryTimeout }
  }
  const apiServer = record(out.apiServer)
  if (apiServer?.timeoutForControlPlane !== undefined) {
    const { timeoutForControlPlane: _moved, ...rest } = apiServer
    out.apiServer = rest
  }
  if (
    timeout !== undefined &&
    (kind === 'InitConfiguration' || (kind === 'JoinConfiguration' && out.controlPlane))
  ) {
    out.timeouts = { ...(record(out.timeouts) ?? {}), controlPlaneComponentHealthCheck: timeout }
  }
  return out
}

function mapArgs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(mapArgs)
  const obj = record(value)
  if (!obj) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj)) {
    const args = record(v)
    out[k] =
      (k === 'extraArgs' || k === 'kubeletExtraArgs') && args
        ? Object.keys(args)
            .sort()
            .map((name) => ({ name, value: String(args[name]) }))
        : mapArgs(v)
  }
  return out
}

function withPullPolicy(registration: unknown): Record<string, unknown> {
  const given = record(registration) ?? {}
  return { ...given, imagePullPolicy: given.imagePullPolicy ?? 'IfNotPresent' }
}

export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  const obj = record(value)
  if (!obj) return value
  return Object.fromEntries(
    Object.keys(obj)
      .sort()
      .map((k) => [k, sortKeys(obj[k])]),
  )
}
