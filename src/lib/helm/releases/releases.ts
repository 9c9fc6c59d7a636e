/**
 * The Helm releases the cluster runs, pinned per Kubernetes version in apply order, and how the
 * workspace config (`upgrade.charts`) overrides (mirrors, local charts) or extends them.
 */
import path from 'node:path'
import type { ChartConfig, ClusterConfig } from '../../config/index.js'
import { API_SERVER_PORT } from '../../contract/index.js'
import { CliError, exitCodeOf, hintOf, messageOf } from '../../errors/index.js'
import { kubernetesMinor, parseSemver } from '../../versions/index.js'
import { parseYaml, readYamlFile } from '../../yaml/index.js'
import { isValues, mergeValues, type Values } from '../binary/index.js'

export { mergeValues, type Values }

/** One release to bring to a pinned chart version. */
export interface ReleaseTarget extends ChartOverride {
  /** Named exception to "at most one minor step" (upstream supports skipping minors). */
  allowMinorJump: boolean
}

/** What chart values need to know of the cluster; what nobody knows is left to the installed values. */
export interface ClusterFacts {
  serviceCIDR?: string
  /** Host of the API server as seen from inside the cluster. */
  apiServerHost?: string
  /** Whether Cilium replaces kube-proxy; only init knows (an upgrade keeps the installed value). */
  kubeProxyReplacement?: boolean
}

interface PinnedRelease {
  name: string
  chart: string
  repository: string
  version: string
  namespace: string
  allowMinorJump: boolean
  values: (facts: ClusterFacts) => Values
}

const CILIUM_REPO = 'https://helm.cilium.io/'
const COREDNS_REPO = 'https://coredns.github.io/helm'
const CERT_MANAGER_REPO = 'https://charts.jetstack.io'

const ciliumValues = (facts: ClusterFacts): Values => ({
  ...(facts.kubeProxyReplacement === undefined ? {} : { kubeProxyReplacement: facts.kubeProxyReplacement }),
  encryption: { enabled: true, type: 'wireguard', strictMode: { enabled: true } },
  ...(facts.apiServerHost ? { k8sServiceHost: facts.apiServerHost, k8sServicePort: API_SERVER_PORT } : {}),
})
const corednsValues = (facts: ClusterFacts): Values =>
  facts.serviceCIDR ? { service: { clusterIP: clusterDnsAddress(facts.serviceCIDR) } } : {}
const certManagerValues = (): Values => ({ crds: { enabled: true } })

function pins(cilium: string, coredns: string, certManager: string): PinnedRelease[] {
  return [
    {
      name: 'cilium',
      chart: 'cilium',
      repository: CILIUM_REPO,
      version: cilium,
      namespace: 'kube-system',
      allowMinorJump: true,
      values: ciliumValues,
    },
    {
      name: 'coredns',
      chart: 'coredns',
      repository: COREDNS_REPO,
      version: coredns,
      namespace: 'kube-system',
      allowMinorJump: false,
      values: corednsValues,
    },
    {
      name: 'cert-manager',
      chart: 'cert-manager',
      repository: CERT_MANAGER_REPO,
      version: certManager,
      namespace: 'cert-manager',
      allowMinorJump: true,
      values: certManagerValues,
    },
  ]
}

/**
 * The pinned default set, keyed by Kubernetes minor, in apply order (CNI first: nothing else
 * schedules without it). The project's own in-cluster services join this table when they ship.
 */
export const PINNED_RELEASES: Readonly<Record<string, readonly PinnedRelease[]>> = {
  'v1.30': pins('1.16.6', '1.36.2', 'v1.16.5'),
  'v1.31': pins('1.17.4', '1.37.3', 'v1.17.2'),
  'v1.32': pins('1.18.1', '1.38.1', 'v1.18.2'),
}

/** A config entry of `upgrade.charts`, checked, with its chart path resolved and values file read. */
export interface ChartOverride {
  name: string
  /** A chart name in `repository`, or a local chart directory / packaged `.tgz` (absolute). */
  chart: string
  repository?: string
  /** Exact chart version. */
  version: string
  namespace: string
  /** Computed values: the cluster's defaults, then the config's values file on top. */
  values: Values
}

/**
 * The config's chart overrides, read before the cluster is asked anything: a bad entry or values
 * file is the operator's input, reported as such whatever the cluster runs.
 */
export async function loadChartOverrides(
  config: Pick<ClusterConfig, 'upgrade'> | undefined,
  workspaceDir: string,
): Promise<ChartOverride[]> {
  const entries = config?.upgrade?.charts ?? []
  checkOverrides(entries)
  const out: ChartOverride[] = []
  for (const [i, o] of entries.entries()) {
    out.push({
      name: o.name,
      // Without a repository the chart is a path; relative paths are relative to the workspace.
      chart: o.repository ? o.chart : path.resolve(workspaceDir, o.chart),
      repository: o.repository,
      version: o.version,
      namespace: o.namespace,
      values: o.valuesFile
        ? await readValuesFile(path.resolve(workspaceDir, o.valuesFile), `upgrade.charts[${i}].valuesFile`)
        : {},
    })
  }
  return out
}

/**
 * The releases for a cluster: the pinned set for the Kubernetes version it runs, each replaced by
 * the override of the same name (its values file merged over the cluster's values), then the
 * other overrides appended in their order.
 */
export function resolveReleases(
  kubernetesVersion: string,
  overrides: readonly ChartOverride[],
  facts: ClusterFacts,
): ReleaseTarget[] {
  const minor = kubernetesMinor(kubernetesVersion)
  const pinned = minor ? PINNED_RELEASES[minor] : undefined
  if (!pinned) {
    throw new CliError(
      `no pinned Helm releases for Kubernetes ${kubernetesVersion}; known: ${Object.keys(PINNED_RELEASES).join(', ')}`,
    )
  }
  const byName = new Map(overrides.map((o) => [o.name, o]))
  const targets: ReleaseTarget[] = pinned.map((pin) => {
    const base: ReleaseTarget = { ...pin, values: pin.values(facts) }
    const o = byName.get(pin.name)
    return o ? { ...base, ...o, values: mergeValues(base.values, o.values) } : base
  })
  for (const o of overrides) {
    if (!pinned.some((p) => p.name === o.name)) targets.push({ ...o, allowMinorJump: false })
  }
  return targets
}

function checkOverrides(overrides: readonly ChartConfig[]): void {
  const seen = new Set<string>()
  for (const [i, o] of overrides.entries()) {
    if (seen.has(o.name)) {
      throw new CliError(`upgrade.charts[${i}].name: release ${JSON.stringify(o.name)} is listed twice`)
    }
    seen.add(o.name)
    if (!parseSemver(o.version)) {
      throw new CliError(
        `upgrade.charts[${i}].version: ${JSON.stringify(o.version)} is not an exact chart version like 1.2.3`,
      )
    }
  }
}

async function readValuesFile(file: string, where: string): Promise<Values> {
  const text = await readYamlFile(file, { what: 'values file' }).catch((err: unknown) => {
    throw new CliError(`${where}: ${messageOf(err)}`, { exitCode: exitCodeOf(err), hint: hintOf(err) })
  })
  const { value } = parseYaml(text, file)
  if (value === null || value === undefined) return {}
  if (!isValues(value)) throw new CliError(`${where}: ${file} must hold a YAML mapping of chart values`)
  return value
}

/** kubeadm gives the cluster DNS service the 10th address of the service network. */
export function clusterDnsAddress(serviceCIDR: string): string {
  const [ip = '', bitsText = '32'] = serviceCIDR.split('/')
  const octets = ip.split('.').map(Number)
  const bits = Number(bitsText)
  const valid = octets.length === 4 && octets.every((o) => Number.isInteger(o) && o >= 0 && o <= 255)
  if (!valid || !Number.isInteger(bits) || bits < 0 || bits > 28) {
    throw new CliError(
      `serviceCIDR ${JSON.stringify(serviceCIDR)} is not an IPv4 CIDR of at least 16 addresses`,
    )
  }
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0
  const network = (octets.reduce((acc, o) => acc * 256 + o, 0) & mask) >>> 0
  const n = network + 10
  return [24, 16, 8, 0].map((shift) => (n >>> shift) & 255).join('.')
}
