/**
 * `constellation status`: per node its role, whether its verification service answers, whether
 * it attests against the workspace's measurements, whether PCR 15 shows this cluster's ID, and what
 * Kubernetes says of it; the cluster's Kubernetes version and Helm releases. Every node is asked
 * at once (bounded), and one that does not answer is a row, not an error.
 */
import {
  attestationAssurance,
  describeHardware,
  type AttestationAssurance,
  type AttestationVariant,
} from '../attestation/index.js'
import { messageOf } from '../errors/index.js'
import type { InstalledRelease } from '../helm/index.js'
import { formatHostPort } from '../system/index.js'
import type { VerifyReport } from '../verify/index.js'
import type { ClusterView } from './cluster-view.js'

export interface NodeVerdict {
  report?: VerifyReport
  /** Set when the node did not attest; `unreachable` when it did not answer at all. */
  error?: { message: string; unreachable: boolean }
}

export interface StatusDeps {
  readCluster(): Promise<ClusterView>
  /** Attests the node at `endpoint` against the workspace's measurements and cluster ID. */
  verify(endpoint: string): Promise<NodeVerdict>
  /** The workspace's attestation variant, which every node is verified with. */
  variant: AttestationVariant
  /** Undefined when helm is not there to ask. */
  releases?(): Promise<InstalledRelease[]>
  /** Asked alone when the API does not answer: the first node, from the workspace state. */
  fallbackHost?: string
  verifyPort: number
}

export type Attestation = 'trusted' | 'untrusted' | 'unreachable' | 'no address'

export interface NodeStatus {
  name: string
  roles: string[]
  address?: string
  attestation: Attestation
  /** Why it is not trusted or not reachable. */
  reason?: string
  /** PCR 15 against the workspace's cluster ID: known only when the node sent its quote. */
  clusterIdPcr: 'match' | 'mismatch' | 'unknown'
  /** Undefined when the Kubernetes API was not reachable. */
  kubernetes?: {
    ready: boolean
    notReady?: string
    /** Cordoned (kubectl's SchedulingDisabled): an upgrade or a removal under way, or one that stopped. */
    unschedulable?: boolean
    kubeletVersion?: string
    /** Its upgrade agent's last answer, when it is for the cluster's upgrade and not a success. */
    upgrade?: { state: string; phase?: string; message?: string }
  }
  /** Confidential-VM variants: whose root the node's hardware evidence chained to. */
  hardware?: string
}

/** The cluster's last Kubernetes upgrade, as its record says. */
export interface KubernetesUpgradeStatus {
  id: string
  target: string
  state: 'running' | 'succeeded' | 'failed'
  /** Nodes whose kubelet is at the target. */
  atTarget: number
  failure?: { node: string; phase?: string; message: string }
}

export interface StatusReport {
  kubernetesVersion?: string
  kubernetesUpgrade?: KubernetesUpgradeStatus
  apiError?: string
  nodes: NodeStatus[]
  releases?: Array<Pick<InstalledRelease, 'name' | 'namespace' | 'version' | 'status'>>
  releasesError?: string
  /** Every node reachable, trusted, of this cluster and Ready, and the API answered. */
  healthy: boolean
  /** What "trusted" proves with the workspace's variant. */
  attestation: AttestationAssurance
}

export async function clusterStatus(deps: StatusDeps): Promise<StatusReport> {
  // helm lists the releases while the nodes are verified: only the nodes wait for the API's view
  const listing = deps.releases?.().then(
    (list) => ({ list }),
    (err: unknown) => ({ error: messageOf(err) }),
  )
  const cluster = await deps.readCluster().then(
    (view) => ({ view }),
    (err: unknown) => ({ error: messageOf(err) }),
  )
  const targets =
    'view' in cluster
      ? cluster.view.nodes.map((n) => ({ name: n.name, roles: n.roles, address: n.internalIP, node: n }))
      : deps.fallbackHost
        ? [{ name: deps.fallbackHost, roles: [] as string[], address: deps.fallbackHost, node: undefined }]
        : []
  const nodes = await Promise.all(
    targets.map(async (t): Promise<NodeStatus> => {
      const upgradeId = 'view' in cluster ? cluster.view.upgrade?.id : undefined
      const agent = t.node?.upgrade
      const kubernetes = t.node && {
        ready: t.node.ready,
        ...(t.node.notReady ? { notReady: t.node.notReady } : {}),
        ...(t.node.unschedulable && { unschedulable: true }),
        kubeletVersion: t.node.kubeletVersion,
        // the agent's own words about this upgrade's step, unless it went well
        ...(agent && upgradeId && agent.id.startsWith(`${upgradeId}/`) && agent.state !== 'succeeded'
          ? { upgrade: { state: agent.state, phase: agent.phase, message: agent.message } }
          : {}),
      }
      const base = { name: t.name, roles: t.roles, address: t.address, ...(kubernetes ? { kubernetes } : {}) }
      if (!t.address) return { ...base, attestation: 'no address', clusterIdPcr: 'unknown' }
      const verdict = await deps.verify(formatHostPort(t.address, deps.verifyPort))
      const pcr15 = verdict.report?.pcrs.find((p) => p.index === 15)?.status
      const clusterIdPcr = pcr15 === 'ok' ? 'match' : pcr15 === 'mismatch' ? 'mismatch' : 'unknown'
      const hw = verdict.report?.hardware
      if (!verdict.error)
        return {
          ...base,
          attestation: 'trusted',
          clusterIdPcr,
          ...(hw && { hardware: describeHardware(hw) }),
        }
      const attestation = verdict.error.unreachable ? 'unreachable' : 'untrusted'
      return { ...base, attestation, reason: verdict.error.message, clusterIdPcr }
    }),
  )
  const releases = await listing
  const report: StatusReport = {
    nodes,
    attestation: attestationAssurance(deps.variant),
    healthy:
      'view' in cluster &&
      nodes.every((n) => n.attestation === 'trusted' && n.clusterIdPcr === 'match' && n.kubernetes?.ready),
  }
  if ('view' in cluster) {
    report.kubernetesVersion = cluster.view.kubernetesVersion
    const record = cluster.view.upgrade
    if (record) {
      report.kubernetesUpgrade = {
        id: record.id,
        target: record.target,
        state: record.state,
        atTarget: cluster.view.nodes.filter((n) => n.kubeletVersion === record.target).length,
        ...(record.failure && { failure: record.failure }),
      }
      // a stopped upgrade leaves a mixed fleet: not healthy until it is finished
      if (record.state === 'failed') report.healthy = false
    }
  } else report.apiError = cluster.error
  if (releases && 'list' in releases)
    report.releases = releases.list.map(({ name, namespace, version, status }) => ({
      name,
      namespace,
      version,
      status,
    }))
  else if (releases) report.releasesError = releases.error
  return report
}
