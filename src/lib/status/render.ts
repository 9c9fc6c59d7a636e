/** The plain text of `constellation status`: one table of nodes, then the cluster's versions. */
import { describeAssurance } from '../attestation/index.js'
import { renderTable } from '../ui/index.js'
import type { StatusReport } from './status.js'

export function renderStatus(r: StatusReport): string {
  const rows = r.nodes.map((n) => [
    n.name,
    n.roles.join(',') || '?',
    n.address ?? '-',
    n.attestation,
    n.clusterIdPcr,
    n.kubernetes ? (n.kubernetes.ready ? 'Ready' : 'NotReady') : '?',
    n.kubernetes?.kubeletVersion ?? '?',
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
  lines.push(
    r.apiError
      ? `Kubernetes API: ${r.apiError}`
      : `Kubernetes ${r.kubernetesVersion ?? '?'}; ${r.nodes.length} node${r.nodes.length === 1 ? '' : 's'}`,
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
