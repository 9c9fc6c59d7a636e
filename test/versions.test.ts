import { createHash } from 'node:crypto'
import { expect } from './support/chai.js'
import {
  componentsFor,
  resolveKubernetesVersion,
  supportedVersions,
  parseKubernetesVersion,
  isPatchRelease,
  kubernetesMinor,
  kubeadmApiVersion,
} from '../src/lib/versions/index.js'
import { type KubernetesVersion, compareVersions } from '../src/lib/versions/kubernetes-version.js'

describe('versions', () => {
  const resolveCases: Record<string, { input: string; want?: string; wantErr?: RegExp }> = {
    'minor with v resolves to the pinned patch': { input: 'v1.31', want: 'v1.31.13' },
    'minor without v resolves too': { input: '1.30', want: 'v1.30.14' },
    'a supported full version is returned unchanged': { input: 'v1.32.9', want: 'v1.32.9' },
    'an unsupported minor lists the supported versions': {
      input: 'v1.99',
      wantErr: /"v1.99" is not supported; supported versions are v1.30.14, v1.31.13, v1.32.9/,
    },
    'another patch of a supported minor is refused, naming the pinned one': {
      input: 'v1.31.2',
      wantErr: /supported patch of v1.31 is v1.31.13/,
    },
    'garbage is refused with the expected form': {
      input: 'latest',
      wantErr: /is not a version of the form v1.31/,
    },
  }
  for (const [name, tc] of Object.entries(resolveCases)) {
    it(name, () => {
      if (tc.wantErr) expect(() => resolveKubernetesVersion(tc.input)).to.throw(tc.wantErr)
      else expect(resolveKubernetesVersion(tc.input)).to.equal(tc.want)
    })
  }

  it('lists supported versions in ascending order', () => {
    const list = supportedVersions()
    expect([...list].sort(compareVersions)).to.deep.equal(list)
    expect(list).to.have.length.greaterThan(1)
  })

  for (const version of supportedVersions()) {
    it(`pins every component of ${version}`, () => {
      const components = componentsFor(version)
      const kubeadm = components.find((c) => c.installPath === '/run/state/bin/kubeadm')
      expect(kubeadm?.url).to.equal(`https://dl.k8s.io/${version}/bin/linux/amd64/kubeadm`)
      for (const c of components) {
        expect(c.installPath).to.match(/^\//)
        if (c.url.startsWith('data:')) {
          const patch = JSON.parse(Buffer.from(c.url.split(',')[1] ?? '', 'base64').toString()) as Array<{
            value: string
          }>
          expect(patch[0]?.value).to.match(/^registry\.k8s\.io\/[a-z-]+:[^@]+@sha256:[0-9a-f]{64}$/)
          const payload = Buffer.from(c.url.split(',')[1] ?? '', 'base64')
          expect(c.hash).to.equal(`sha256:${createHash('sha256').update(payload).digest('hex')}`)
        } else {
          expect(c.hash).to.match(/^sha256:[0-9a-f]{64}$/)
        }
      }
      expect(components.filter((c) => c.extract).map((c) => c.installPath)).to.deep.equal([
        '/opt/cni/bin',
        '/run/state/bin',
      ])
    })
  }

  const parses: Record<string, { want?: KubernetesVersion; release?: boolean; minor?: string }> = {
    'v1.31.2': { want: { major: 1, minor: 31, patch: 2, suffix: '' }, release: true, minor: 'v1.31' },
    '1.31.2': { want: { major: 1, minor: 31, patch: 2, suffix: '' }, release: true, minor: 'v1.31' },
    'v1.31': { want: { major: 1, minor: 31, patch: undefined, suffix: '' }, release: false, minor: 'v1.31' },
    '1.33.1-rc.0': {
      want: { major: 1, minor: 33, patch: 1, suffix: '-rc.0' },
      release: false,
      minor: 'v1.33',
    },
    'v1.30.0+k3s1': {
      want: { major: 1, minor: 30, patch: 0, suffix: '+k3s1' },
      release: false,
      minor: 'v1.30',
    },
    latest: {},
    'v1.31.': {},
    'v1.31-rc.0': {},
    ' v1.31.2': {},
    '': {},
  }
  for (const [text, tc] of Object.entries(parses)) {
    it(`parses ${JSON.stringify(text)}`, () => {
      const got = parseKubernetesVersion(text)
      expect(got).to.deep.equal(tc.want)
      expect(isPatchRelease(got)).to.equal(tc.release === true)
      expect(kubernetesMinor(text)).to.equal(tc.minor)
    })
  }

  const orders: Array<[string, string, number]> = [
    ['v1.30.14', 'v1.31.0', -1],
    ['v1.31.13', 'v1.31.2', 1],
    ['1.31.2', 'v1.31.2', 0],
    ['v1.31', 'v1.31.0', 0],
    ['v1.31.0-rc.1', 'v1.31.0', -1],
    ['v2.0.0', 'v1.99.0', 1],
  ]
  for (const [a, b, sign] of orders) {
    it(`orders ${a} ${sign < 0 ? '<' : sign > 0 ? '>' : '='} ${b}`, () => {
      expect(Math.sign(compareVersions(a, b))).to.equal(sign)
      expect(Math.sign(compareVersions(b, a))).to.equal(-sign)
    })
  }

  // kubeadm reads v1beta4 from 1.31 on (v1beta3 is deprecated there), pre-releases of 1.31 included
  const kubeadmApis: Record<string, string> = {
    'v1.22.0': 'kubeadm.k8s.io/v1beta3',
    'v1.30.14': 'kubeadm.k8s.io/v1beta3',
    'v1.31.0-rc.1': 'kubeadm.k8s.io/v1beta4',
    'v1.31.0': 'kubeadm.k8s.io/v1beta4',
    '1.33.1': 'kubeadm.k8s.io/v1beta4',
  }
  for (const [version, want] of Object.entries(kubeadmApis)) {
    it(`kubeadm reads ${want} for ${version}`, () => expect(kubeadmApiVersion(version)).to.equal(want))
  }
  it('kubeadmApiVersion refuses text that is not a version', () =>
    expect(() => kubeadmApiVersion('latest')).to.throw('"latest" is not a Kubernetes version like v1.31.2'))
})
