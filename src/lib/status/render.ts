/** The plain text of `constellation status`: one table of nodes, then the cluster's versions. */
import { describeAssurance } from '../attestation/index.js'
import { counted } from '../system/index.js'
import { renderTable } from '../ui/index.js'
import type { NodeStatus, StatusReport } from './status.js'

export function renderStatus(r: StatusReport): string {
  const rows = r.nodes.map((n) => [
    n.name,
    n.roles.join(',') || '?',
    n.address ?? '-',
    n.attestation,
    n.clusterIdPcr,
    n.kubernetes
      ? `${n.kubernetes.ready ? 'Ready' : 'NotReady'}${n.kubernetes.unschedulable ? ',SchedulingDisabled' : ''}`
      : '?',
    kubeletCell(n, r.kubernetesUpgrade),
  ])
  const lines = [
    renderTable(['NODE', 'ROLES', 'ADDRESS', 'ATTESTATION', 'PCR 15', 'KUBERNETES', 'KUBELET'], rows),
  ]
  for (const n of r.nodes.filter((x) => x.reason))
    lines.push(`${n.name}: ${(n.reason ?? '').replaceAll('\n', '\n  ')}`)
  // the same for every node of one workspace: said once
  const hardware = [...new Set(r.nodes.flatMap((n) => (n.hardware ? [n.hardware] : [])))]
  lines.push(...hardware)
  for (const n of r.nodes.filter((x) => x.kubernetes?.notReady))
    lines.push(`${n.name}: NotReady: ${n.kubernetes?.notReady ?? ''}`)
  for (const n of r.nodes.filter((x) => x.kubernetes?.upgrade))
    lines.push(`${n.name}: upgrade ${describeAgent(n.kubernetes!.upgrade!)}`)
  lines.push(
    r.apiError
      ? `Kubernetes API: ${r.apiError}`
      : `Kubernetes ${r.kubernetesVersion ?? '?'}; ${counted(r.nodes.length, 'node')}`,
  )
  const u = r.kubernetesUpgrade
  if (u && u.state !== 'succeeded')
    lines.push(
      `Kubernetes upgrade to ${u.target} (${u.id}): ${u.state}, ${u.atTarget} of ${r.nodes.length} nodes at ${u.target}` +
        (u.failure
          ? `; stopped at ${u.failure.node}${r.nodes.some((n) => n.name === u.failure?.node && n.kubernetes?.upgrade) ? ' (above)' : `: ${u.failure.message}`}`
          : '') +
        `; \`upgrade apply --kubernetes ${u.target}\` resumes it`,
    )
  if (r.releases)
    lines.push(
      r.releases.length === 0
        ? 'Helm releases: none'
        : `Helm releases: ${r.releases.map((x) => `${x.name} ${x.version} (${x.status})`).join(', ')}`,
    )
  else if (r.releasesError) lines.push(`Helm releases: ${r.releasesError}`)
  lines.push(`Attestation: ${describeAssurance(r.attestation)}`)
  lines.push(r.healthy ? 'Healthy.' : 'NOT healthy: see the rows above.')
  return lines.join('\n')
}

/** The kubelet's version, and the upgrade's target beside it while the node is not there yet. */
function kubeletCell(n: NodeStatus, upgrade: StatusReport['kubernetesUpgrade']): string {
  const version = n.kubernetes?.kubeletVersion ?? '?'
  if (!upgrade || upgrade.state === 'succeeded' || version === upgrade.target) return version
  return `${version} → ${upgrade.target}`
}

function describeAgent(a: NonNullable<NonNullable<NodeStatus['kubernetes']>['upgrade']>): string {
  return [a.state, a.phase && `in ${a.phase}`, a.message].filter(Boolean).join(': ')
}
