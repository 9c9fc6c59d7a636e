import { describeCluster } from '../../src/lib/helm/releases/cluster-facts.js'
import type { ClusterState } from '../../src/lib/config/index.js'
import { expect } from '../support/chai.js'

/** A cluster whose kube-system/kubeadm-config holds `clusterConfiguration` (none when undefined). */
const reader = (clusterConfiguration?: string, kubeProxy = false) => ({
  serverVersion: async () => 'v1.31.13',
  configMapData: async (namespace: string, name: string): Promise<Record<string, string> | undefined> => {
    if (namespace !== 'kube-system') return undefined
    if (name === 'kubeadm-config' && clusterConfiguration !== undefined)
      return { ClusterConfiguration: clusterConfiguration }
    return name === 'kube-proxy' && kubeProxy ? { 'config.conf': '' } : undefined
  },
})
const state = (inClusterEndpoint: string) =>
  ({ infrastructure: { inClusterEndpoint, clusterEndpoint: '192.0.2.1:9000' } }) as unknown as ClusterState

describe('what the cluster says about itself (upgrade without a config)', () => {
  const cases = {
    "kubeadm's ClusterConfiguration gives the service network and the API endpoint": {
      kubeadm: 'controlPlaneEndpoint: 10.0.0.9:6443\nnetworking:\n  serviceSubnet: 10.100.0.0/16\n',
      workspace: {},
      want: { serviceCIDR: '10.100.0.0/16', apiServerHost: '10.0.0.9', kubeProxyReplacement: true },
    },
    'a dual-stack cluster: cluster DNS lives in the first subnet': {
      kubeadm: 'networking:\n  serviceSubnet: 10.96.0.0/12,fd00::/108\n',
      workspace: {},
      want: { serviceCIDR: '10.96.0.0/12', apiServerHost: undefined, kubeProxyReplacement: true },
    },
    "the workspace state's in-cluster endpoint wins over kubeadm's": {
      kubeadm: 'controlPlaneEndpoint: 10.0.0.9:6443\n',
      workspace: { state: state('10.0.0.42:6443') },
      want: { serviceCIDR: undefined, apiServerHost: '10.0.0.42', kubeProxyReplacement: true },
    },
    'without kubeadm-config, the config fills the service network': {
      kubeadm: undefined,
      workspace: { config: { serviceCIDR: '10.96.0.0/12' } },
      want: { serviceCIDR: '10.96.0.0/12', apiServerHost: undefined },
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const got = await describeCluster(reader(tc.kubeadm), tc.workspace)
      expect(got).to.deep.equal({ kubernetesVersion: 'v1.31.13', facts: tc.want })
    })
  }

  it("kubeadm's kube-proxy addon runs (--conformance): Cilium does not replace it", async () => {
    const got = await describeCluster(reader('networking: {}\n', true), {})
    expect(got.facts.kubeProxyReplacement).to.equal(false)
  })

  it('a ClusterConfiguration that is not YAML is an error naming the ConfigMap and key', async () => {
    await expect(describeCluster(reader('networking: [unclosed\n'), {})).to.be.rejectedWith(
      /ConfigMap kube-system\/kubeadm-config, key ClusterConfiguration/,
    )
  })
})
