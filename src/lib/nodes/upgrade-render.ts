/** The plan and the report of `constellation upgrade apply --kubernetes`, as text. */
import type { KubernetesUpgradePlan } from './upgrade-plan.js'
import type { KubernetesUpgradeReport } from './upgrade-run.js'

const STEP_TEXT = { apply: 'kubeadm upgrade apply', node: 'kubeadm upgrade node' } as const

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map(
    (r) =>
      '  ' +
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
  )
}

export function renderKubernetesPlan(plan: KubernetesUpgradePlan): string {
  const todo = plan.nodes.filter((n) => n.action !== 'done')
  const lines = [
    `Kubernetes upgrade of the cluster at ${plan.server}: ${plan.from} → ${plan.target}`,
    plan.resumes
      ? `  resuming upgrade ${plan.id} (${plan.resumes.state} since ${plan.resumes.updatedAt}${plan.resumes.failure ? `, at ${plan.resumes.failure.node}: \`status\` says why` : ''})`
      : `  upgrade ${plan.id}`,
    `  components: ${plan.components.length} from ${plan.componentsSource}, ${plan.componentsDigest.slice(0, 19)}…; each node verifies every sha256 before it changes anything`,
    '',
    ...table([
      ['NODE', 'ROLE', 'KUBELET', 'STEP'],
      ...plan.nodes.map((n) => [
        n.name,
        n.role,
        n.kubeletVersion ?? '?',
        n.action === 'done'
          ? `done (at ${plan.target})`
          : n.action === 'uncordon'
            ? `uncordon (at ${plan.target}; left cordoned by an interrupted run)`
            : STEP_TEXT[n.step],
      ]),
    ]),
    '',
  ]
  lines.push(
    todo.length === 0
      ? `Every node is at ${plan.target}: nothing to do.`
      : `One node at a time, in this order: cordon, drain, its upgrade agent's step, Ready at ${plan.target}, uncordon.`,
  )
  return lines.join('\n')
}

export function renderKubernetesReport(r: KubernetesUpgradeReport): string {
  if (r.declined) return 'Declined: nothing was changed.'
  const lines: string[] = []
  if (r.failure) lines.push(`Upgrade to ${r.target} stopped at ${r.failure.node}.`)
  else if (r.nodes.every((n) => n.outcome === 'already at target'))
    lines.push(`The cluster is at ${r.target}; no node was changed.`)
  else lines.push(`The cluster is upgraded to ${r.target}${r.resumed ? ' (resumed)' : ''}.`)
  lines.push(...table(r.nodes.map((n) => [n.name, n.outcome])))
  return lines.join('\n')
}
