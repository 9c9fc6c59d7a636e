/**
 * The eviction subresource of the Kubernetes API contract fake (a TEST DOUBLE), held to the REAL
 * kubectl 1.35's `drain`: it finds the subresource in discovery, cordons, evicts through it,
 * retries what a PodDisruptionBudget refuses and waits for evicted pods to be gone.
 */
import { KubectlHarness } from '../support/kubectl-harness.js'
import { expect } from '../support/chai.js'
import type { FakeApiServer, KubeObject } from '../../src/lib/simulator/fake-apiserver.js'

const pod = (name: string, labels: Record<string, string>, owner = 'ReplicaSet'): KubeObject => ({
  metadata: {
    name,
    namespace: 'apps',
    labels,
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: owner, name: 'o', uid: `uid-${owner}`, controller: true },
    ],
  },
  spec: { nodeName: 'worker-1', containers: [{ name: 'c', image: 'x' }] },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
})

describe('Kubernetes API contract fake: pod eviction, as the real kubectl 1.35 drains a node', function () {
  this.timeout(60_000)
  let h: KubectlHarness
  let api: FakeApiServer
  beforeEach(async () => {
    h = await KubectlHarness.start({ timeoutMs: 30_000 })
    api = h.api
    api.put('v1', 'nodes', { metadata: { name: 'worker-1' }, spec: {} })
  })
  afterEach(async () => h?.stop())

  const drain = (timeout = '8s') =>
    h.kubectl('drain', 'worker-1', '--ignore-daemonsets', '--delete-emptydir-data', `--timeout=${timeout}`)

  it("cordons, evicts every pod but a DaemonSet's, and waits until they are gone", async () => {
    api.put('v1', 'pods', pod('web-1', { app: 'web' }))
    // kubectl looks the DaemonSet up: one whose controller is gone is an error without --force
    api.put('apps/v1', 'daemonsets', {
      metadata: { name: 'o', namespace: 'apps' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: { metadata: { labels: { app: 'agent' } } },
      },
    })
    api.put('v1', 'pods', pod('agent', { app: 'agent' }, 'DaemonSet'))
    const r = await drain()
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.contain('node/worker-1 cordoned')
    expect(r.stdout).to.contain('pod/web-1 evicted')
    expect(r.stdout).to.contain('node/worker-1 drained')
    expect(api.list('v1', 'pods', 'apps').map((p) => p.metadata.name)).to.deep.equal(['agent'])
    expect((api.get('v1', 'nodes', 'worker-1')?.spec as { unschedulable?: boolean }).unschedulable).to.equal(
      true,
    )
    expect(
      api.requests.some(
        (q) => q.method === 'POST' && q.path === '/api/v1/namespaces/apps/pods/web-1/eviction',
      ),
    ).to.equal(true)
  })

  it("retries an eviction a PodDisruptionBudget refuses (429, the budget's message) until kubectl's timeout", async () => {
    api.put('v1', 'pods', pod('db-0', { app: 'db' }))
    api.put('policy/v1', 'poddisruptionbudgets', {
      metadata: { name: 'db', namespace: 'apps' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
    })
    const r = await drain('2s')
    expect(r.code).to.not.equal(0)
    expect(r.stderr).to.contain(
      `error when evicting pods/"db-0" -n "apps" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
    )
    expect(api.list('v1', 'pods', 'apps').map((p) => p.metadata.name)).to.deep.equal(['db-0'])
  })

  it('refuses a pod that two budgets select (500), as kube-apiserver does', async () => {
    api.put('v1', 'pods', pod('db-0', { app: 'db' }))
    for (const name of ['a', 'b'])
      api.put('policy/v1', 'poddisruptionbudgets', {
        metadata: { name, namespace: 'apps' },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'db' } } },
      })
    const r = await drain()
    expect(r.code).to.not.equal(0)
    expect(r.stderr).to.contain(
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    )
  })
})
