/**
 * A node that joins after the cluster moved to a new Kubernetes version runs that version: the join
 * service (its real wiring, a CLI process) reads the version from kube-system/kubeadm-config and the
 * components of it from kube-system/constellation-components-<version>, the joining node installs
 * those (the simulator's kubeadm and kubelet of v1.32.9) and joins with them; its kubelet reports
 * v1.32.9. The cluster's side of an upgrade is written here as `kubeadm upgrade apply` and the
 * operator's upgrade leave it (the agent's own tests run those steps).
 */
import { readFile } from 'node:fs/promises'
import { parse, stringify } from 'yaml'
import { encodeComponents } from '../../src/lib/versions/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { simulatedComponents, simulatorPaths } from '../../src/lib/simulator/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import {
  initFirstControlPlane,
  joinAuditLines,
  startTestCluster,
  type TestCluster,
} from '../support/test-cluster.js'

const TARGET = 'v1.32.9'

describe('a node that joins after an upgrade runs the new version (CLI processes)', function () {
  this.timeout(300_000)
  let cluster: TestCluster
  before(async () => (cluster = await startTestCluster()))
  after(() => cluster?.stop())

  it("gets the cluster's version and its components in the ticket, and joins with them", async () => {
    const cp0 = await initFirstControlPlane(cluster)
    // what `kubeadm upgrade apply v1.32.9` and the operator's upgrade leave in the cluster
    const cm = cluster.api.get('v1', 'configmaps', 'kubeadm-config', 'kube-system')
    if (!cm) throw new Error('kubeadm init uploaded no kubeadm-config')
    const data = (cm as unknown as { data: { ClusterConfiguration: string } }).data
    const clusterConfiguration = parse(data.ClusterConfiguration) as Record<string, unknown>
    expect(clusterConfiguration.kubernetesVersion).to.equal('v1.31.13')
    cluster.api.put('v1', 'configmaps', {
      ...cm,
      data: { ClusterConfiguration: stringify({ ...clusterConfiguration, kubernetesVersion: TARGET }) },
    })
    const sim = simulatorPaths(REPO_ROOT)
    const components = simulatedComponents(TARGET, {
      nodeBinary: process.execPath,
      kubeadmFake: sim.kubeadmFake,
      kubeletUnit: sim.kubeletUnit,
    })
    cluster.api.put('v1', 'configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `constellation-components-${TARGET}`, namespace: 'kube-system' },
      data: { components: encodeComponents(components) },
    })

    const worker = await cluster.addNode({ name: 'worker_0', role: 'worker', peers: [cp0.member] })
    const joined = await (await worker.start()).exited
    expect(joined.code, joined.stderr + joined.stdout).to.equal(0)
    expect(joined.stderr).to.match(/"msg":"Node joined the cluster".*"kubernetesVersion":"v1\.32\.9"/)
    expect(joined.stderr, 'the installed kubeadm is of the cluster version').not.to.include(
      'The join ticket says the cluster runs',
    )
    const wp = nodePaths(worker.local.root)
    const installed = await createRunner().run(wp.kubeadm, ['version', '-o', 'short'])
    expect(installed.stdout.trim()).to.equal(TARGET)
    expect(await readFile(wp.kubelet, 'utf8')).to.include(`KUBELET_FAKE_VERSION=${TARGET}`)
    await eventually('worker-0 registered', async () => cluster.api.get('v1', 'nodes', 'worker-0'))
    expect((await joinAuditLines(cp0)).map((l) => [l.node, l.verdict])).to.deep.include(['worker-0', 'ok'])
  })
})
