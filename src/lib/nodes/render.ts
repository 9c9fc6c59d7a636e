/** The plan and the report of `constellation node remove`, as text. */
import type { RemovalPlan, RemovalReport } from './remove.js'

export function renderRemovalPlan(plan: RemovalPlan): string {
  const lines = [`Removing ${plan.role} ${plan.node} from the cluster at ${plan.server}:`]
  if (plan.nodeExists) {
    lines.push(`  1. cordon ${plan.node} and drain it (evictions, honouring PodDisruptionBudgets)`)
    for (const p of plan.pods)
      lines.push(
        p.action === 'evict'
          ? `       evict ${p.pod}${p.note ? ` (${p.note})` : ''}`
          : `       keep  ${p.pod} (${p.why})`,
      )
    if (plan.pods.length === 0) lines.push('       no pods run on it')
  } else lines.push(`  1. the Node is gone already (an earlier removal): nothing to drain`)
  lines.push(
    plan.etcd
      ? `  2. remove etcd member ${plan.etcd.member.name} (${plan.etcd.member.id}) from ${plan.etcd.where}: ${plan.etcd.membersAfter} remain`
      : plan.role === 'control-plane'
        ? '  2. its etcd member is gone already'
        : '  2. no etcd member (a worker)',
  )
  lines.push(plan.nodeExists ? `  3. delete Node ${plan.node}` : '  3. (Node deleted already)')
  lines.push(
    `  4. delete its disk records (${plan.diskRecords.join(', ') || 'none'}): its state disk can no longer rejoin`,
  )
  lines.push(`  5. delete the bootstrap tokens issued to it (${plan.bootstrapTokens.join(', ') || 'none'})`)
  return lines.join('\n')
}

/** `machine`: what became of the machine, when the caller retired it too (`mini remove`). */
export function renderRemovalReport(r: RemovalReport, machine?: string): string {
  if (r.declined) return `Declined: ${r.node} was not changed.`
  const changed = r.nodeDeleted || r.diskRecordsDeleted.length > 0 || r.bootstrapTokensDeleted.length > 0
  const lines = [
    changed ? `${r.node} is removed from the cluster.` : `${r.node} was out of the cluster already.`,
  ]
  if (r.evicted.length) lines.push(`  evicted: ${r.evicted.join(', ')}`)
  if (r.etcdMemberRemoved) lines.push(`  etcd member removed: ${r.etcdMemberRemoved}`)
  if (r.diskRecordsDeleted.length) lines.push(`  disk records deleted: ${r.diskRecordsDeleted.join(', ')}`)
  if (r.bootstrapTokensDeleted.length)
    lines.push(`  bootstrap tokens deleted: ${r.bootstrapTokensDeleted.join(', ')}`)
  lines.push(
    machine ?? '  its state disk is refused if it asks to rejoin: power the machine off and delete it',
  )
  return lines.join('\n')
}
