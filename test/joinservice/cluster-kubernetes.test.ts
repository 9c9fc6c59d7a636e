/**
 * What a join ticket says the cluster runs: kubeadm-config's kubernetesVersion, and the components
 * the cluster recorded for that version (else the control plane's own file); every read failure
 * names the object.
 */
import { clusterKubernetesSource } from '../../src/lib/joinservice/cluster-kubernetes.js'
import { encodeComponents, type KubernetesComponent } from '../../src/lib/versions/index.js'
import { expect } from '../support/chai.js'

const comp = (v: string): KubernetesComponent => ({
  url: `https://dl.k8s.io/${v}/bin/linux/amd64/kubeadm`,
  hash: `sha256:${'a'.repeat(64)}`,
  installPath: '/run/state/bin/kubeadm',
  extract: false,
})
const LOCAL = [comp('v1.31.13')]
const RECORDED = [comp('v1.32.9')]

type Maps = Record<string, Record<string, string> | Error>
const source = (maps: Maps) =>
  clusterKubernetesSource({
    api: {
      getConfigMap: (namespace, name) => {
        const m = maps[`${namespace}/${name}`]
        if (m instanceof Error) return Promise.reject(m)
        return Promise.resolve(m && { data: m, resourceVersion: '1' })
      },
    },
    localComponents: () => Promise.resolve(LOCAL),
  })
const kubeadmConfig = (version: string) => ({
  'kube-system/kubeadm-config': {
    ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4\nkubernetesVersion: ${version}\n`,
  },
})

describe('join service: the Kubernetes version and components a ticket carries', () => {
  it("is the ClusterConfiguration's version with this control plane's components when the cluster recorded none", async () => {
    expect(await source(kubeadmConfig('v1.31.13'))()).to.deep.equal({
      version: 'v1.31.13',
      components: LOCAL,
    })
  })

  it('takes the components the cluster recorded for that version (after an upgrade)', async () => {
    const got = await source({
      ...kubeadmConfig('v1.32.9'),
      'kube-system/constellation-components-v1.32.9': { components: encodeComponents(RECORDED) },
      'kube-system/constellation-components-v1.31.13': { components: encodeComponents(LOCAL) },
    })()
    expect(got).to.deep.equal({ version: 'v1.32.9', components: RECORDED })
  })

  const failures: Record<string, { maps: Maps; want: RegExp }> = {
    'no kubeadm-config': {
      maps: {},
      want: /ConfigMap kube-system\/kubeadm-config has no ClusterConfiguration/,
    },
    'a version that is none': {
      maps: kubeadmConfig('latest'),
      want: /ClusterConfiguration.kubernetesVersion "latest" is not a version like v1.32.9/,
    },
    'a ClusterConfiguration that is no YAML': {
      maps: { 'kube-system/kubeadm-config': { ClusterConfiguration: 'a: [' } },
      want: /kubeadm-config: ClusterConfiguration is not YAML/,
    },
    'an API error': {
      maps: { 'kube-system/kubeadm-config': new Error('GET …: 503') },
      want: /reading ConfigMap kube-system\/kubeadm-config: GET …: 503/,
    },
    'recorded components that are broken': {
      maps: {
        ...kubeadmConfig('v1.32.9'),
        'kube-system/constellation-components-v1.32.9': { components: '[{"url": 1}]' },
      },
      want: /ConfigMap kube-system\/constellation-components-v1.32.9, key components: \[0\]\.url: want a string/,
    },
  }
  for (const [name, tc] of Object.entries(failures))
    it(`fails naming the object for ${name}`, async () => {
      await expect(source(tc.maps)()).to.be.rejectedWith(tc.want)
    })
})
