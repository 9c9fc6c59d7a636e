import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { ChartConfig } from '../../src/lib/config/index.js'
import { supportedVersions } from '../../src/lib/versions/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import {
  clusterDnsAddress,
  mergeValues,
  PINNED_RELEASES,
  loadChartOverrides,
  resolveReleases,
  type ClusterFacts,
} from '../../src/lib/helm/releases/releases.js'

const facts: ClusterFacts = { serviceCIDR: '10.96.0.0/12', apiServerHost: '10.0.0.5' }
const config = (charts?: ChartConfig[]) => ({ upgrade: { charts } })
const resolve = async (charts: ChartConfig[] | undefined, dir: string) =>
  resolveReleases('v1.31.13', await loadChartOverrides(config(charts), dir), facts)

describe('pinned Helm releases and config overrides', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> }
  beforeEach(async () => {
    tmp = await makeTempDir()
  })
  afterEach(() => tmp.cleanup())

  it('pins a release set for every supported Kubernetes version, CNI first', () => {
    for (const v of supportedVersions()) {
      const pins = PINNED_RELEASES[v.replace(/\.\d+$/, '')]
      expect(
        pins?.map((p) => p.name),
        v,
      ).to.deep.equal(['cilium', 'coredns', 'cert-manager'])
      for (const p of pins ?? []) expect(p.version, p.name).to.match(/^v?\d+\.\d+\.\d+$/)
    }
  })

  it('gives the defaults the values the cluster needs', async () => {
    const got = await resolve(undefined, tmp.dir)
    expect(got.map((r) => [r.name, r.repository, r.namespace])).to.deep.equal([
      ['cilium', 'https://helm.cilium.io/', 'kube-system'],
      ['coredns', 'https://coredns.github.io/helm', 'kube-system'],
      ['cert-manager', 'https://charts.jetstack.io', 'cert-manager'],
    ])
    expect(got[0]?.values).to.include({ k8sServiceHost: '10.0.0.5', k8sServicePort: 6443 })
    expect(got[1]?.values).to.deep.equal({ service: { clusterIP: '10.96.0.10' } })
  })

  it('overrides a default by name (mirror, local chart) and appends new releases in order', async () => {
    await writeFile(path.join(tmp.dir, 'dns.yaml'), 'service:\n  clusterIP: 10.96.0.53\nreplicaCount: 3\n')
    const got = await resolve(
      [
        { name: 'extra', chart: 'charts/extra', version: '0.1.0', namespace: 'tools' },
        {
          name: 'coredns',
          chart: 'coredns',
          repository: 'https://mirror.example/helm',
          version: '1.37.9',
          namespace: 'kube-system',
          valuesFile: 'dns.yaml',
        },
      ],
      tmp.dir,
    )
    expect(got.map((r) => r.name)).to.deep.equal(['cilium', 'coredns', 'cert-manager', 'extra'])
    expect(got[1]).to.include({
      repository: 'https://mirror.example/helm',
      version: '1.37.9',
      allowMinorJump: false,
    })
    expect(got[1]?.values).to.deep.equal({ service: { clusterIP: '10.96.0.53' }, replicaCount: 3 })
    expect(got[3]).to.include({ chart: path.join(tmp.dir, 'charts/extra'), namespace: 'tools' })
    expect(got[3]).to.not.have.property('valuesFile')
  })

  const bad: Record<string, { charts: ChartConfig[]; err: RegExp }> = {
    'a release listed twice': {
      charts: [
        { name: 'x', chart: 'a', version: '1.0.0', namespace: 'n' },
        { name: 'x', chart: 'b', version: '1.0.0', namespace: 'n' },
      ],
      err: /upgrade\.charts\[1\]\.name: release "x" is listed twice/,
    },
    'a version range instead of a version': {
      charts: [{ name: 'x', chart: 'a', version: '^1.0', namespace: 'n' }],
      err: /upgrade\.charts\[0\]\.version: "\^1\.0" is not an exact chart version/,
    },
    'a missing values file': {
      charts: [{ name: 'x', chart: 'a', version: '1.0.0', namespace: 'n', valuesFile: 'gone.yaml' }],
      err: /upgrade\.charts\[0\]\.valuesFile: values file .*gone\.yaml does not exist/,
    },
  }
  for (const [name, tc] of Object.entries(bad)) {
    it(`refuses ${name}, naming the key`, async () => {
      await expect(resolve(tc.charts, tmp.dir)).to.be.rejectedWith(tc.err)
    })
  }

  it('refuses a values file that is not a mapping', async () => {
    await writeFile(path.join(tmp.dir, 'v.yaml'), '- a\n- b\n')
    const charts = [{ name: 'x', chart: 'a', version: '1.0.0', namespace: 'n', valuesFile: 'v.yaml' }]
    await expect(resolve(charts, tmp.dir)).to.be.rejectedWith(/must hold a YAML mapping/)
  })

  it('merges values recursively, later wins, lists replaced', () => {
    expect(mergeValues({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, e: 2 })).to.deep.equal({
      a: { b: 1, c: [3] },
      d: 1,
      e: 2,
    })
  })

  it('puts cluster DNS at the 10th address of the service CIDR', () => {
    expect(clusterDnsAddress('10.96.0.0/12')).to.equal('10.96.0.10')
    expect(clusterDnsAddress('192.168.255.250/24')).to.equal('192.168.255.10')
    expect(() => clusterDnsAddress('fd00::/108')).to.throw(/not an IPv4 CIDR/)
    expect(() => clusterDnsAddress('10.0.0.0/30')).to.throw(/at least 16 addresses/)
  })
})
