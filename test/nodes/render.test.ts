/** The plan and report of `node remove` as the operator reads them. */
import { renderRemovalPlan, renderRemovalReport } from '../../src/lib/nodes/render.js'
import type { RemovalPlan, RemovalReport } from '../../src/lib/nodes/remove.js'
import { expect } from '../support/chai.js'

const report: RemovalReport = {
  node: 'worker-1',
  declined: false,
  cordoned: true,
  evicted: ['apps/web-1'],
  kept: [],
  nodeDeleted: true,
  diskRecordsDeleted: ['constellation-state-disk-1111'],
  bootstrapTokensDeleted: ['bootstrap-token-aaaaaa'],
}

describe('node remove: plan and report as text', () => {
  it('a control plane: each step, the pods, the etcd member and how many remain', () => {
    const plan: RemovalPlan = {
      node: 'control-plane-2',
      server: 'https://10.0.0.2:6443',
      role: 'control-plane',
      nodeExists: true,
      pods: [
        { pod: 'apps/web-1', action: 'evict' },
        { pod: 'apps/bare', action: 'evict', note: 'no controller: nothing recreates it elsewhere' },
        { pod: 'kube-system/agent', action: 'keep', why: 'managed by a DaemonSet: it goes with the Node' },
      ],
      etcd: { member: { id: 'ab12', name: 'control-plane-2', peerURLs: [] }, membersAfter: 2, where: 'etcd' },
      diskRecords: ['constellation-state-disk-1111'],
      bootstrapTokens: [],
    }
    expect(renderRemovalPlan(plan)).to.equal(
      [
        'Removing control-plane control-plane-2 from the cluster at https://10.0.0.2:6443:',
        '  1. cordon control-plane-2 and drain it (evictions, honouring PodDisruptionBudgets)',
        '       evict apps/web-1',
        '       evict apps/bare (no controller: nothing recreates it elsewhere)',
        '       keep  kube-system/agent (managed by a DaemonSet: it goes with the Node)',
        '  2. remove etcd member control-plane-2 (ab12) from etcd: 2 remain',
        '  3. delete Node control-plane-2',
        '  4. delete its disk records (constellation-state-disk-1111): its state disk can no longer rejoin',
        '  5. delete the bootstrap tokens issued to it (none)',
      ].join('\n'),
    )
  })

  const cases: Record<string, { report: RemovalReport; machine?: string; want: string }> = {
    'node remove': {
      report,
      want: [
        'worker-1 is removed from the cluster.',
        '  evicted: apps/web-1',
        '  disk records deleted: constellation-state-disk-1111',
        '  bootstrap tokens deleted: bootstrap-token-aaaaaa',
        '  its state disk is refused if it asks to rejoin: power the machine off and delete it',
      ].join('\n'),
    },
    'mini remove of a node retired already': {
      report: {
        ...report,
        evicted: [],
        nodeDeleted: false,
        diskRecordsDeleted: [],
        bootstrapTokensDeleted: [],
      },
      machine: '  worker-1 is powered off; removed /ws/nodes/worker-1',
      want: 'worker-1 was out of the cluster already.\n  worker-1 is powered off; removed /ws/nodes/worker-1',
    },
    declined: { report: { ...report, declined: true }, want: 'Declined: worker-1 was not changed.' },
  }
  for (const [name, tc] of Object.entries(cases))
    it(`report: ${name}`, () => expect(renderRemovalReport(tc.report, tc.machine)).to.equal(tc.want))
})
