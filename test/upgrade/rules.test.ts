import { parseHelmTimeout } from '../../src/lib/helm/binary/timeout.js'
import { helmArgs } from '../../src/lib/helm/binary/helm-args.js'
import { expect } from '../support/chai.js'
import { judgeUpgrade, type Verdict } from '../../src/lib/upgrade/rules.js'
import { parseReleaseList } from '../../src/lib/helm/binary/helm.js'

describe('upgrade rules', () => {
  const cases: Record<
    string,
    {
      installed?: string
      target: string
      force?: boolean
      jump?: boolean
      want: Verdict['action']
      reason: RegExp
    }
  > = {
    'not installed → install': { target: '1.1.0', want: 'install', reason: /not installed/ },
    'one patch up → upgrade': {
      installed: '1.1.0',
      target: '1.1.1',
      want: 'upgrade',
      reason: /1\.1\.0 → 1\.1\.1/,
    },
    'one minor up → upgrade': { installed: 'v1.16.5', target: 'v1.17.2', want: 'upgrade', reason: /→/ },
    'same version → skip': {
      installed: '1.1.0',
      target: '1.1.0',
      want: 'skip',
      reason: /already at 1\.1\.0/,
    },
    'downgrade → skip': { installed: '1.2.0', target: '1.1.0', want: 'skip', reason: /would downgrade/ },
    'release below its prerelease → downgrade': {
      installed: '1.2.0',
      target: '1.2.0-rc.1',
      want: 'skip',
      reason: /would downgrade/,
    },
    'two minors up → skip': { installed: '1.0.0', target: '1.2.0', want: 'skip', reason: /skips 1 minor/ },
    'two minors up, named exception → upgrade': {
      installed: '1.0.0',
      target: '1.2.0',
      jump: true,
      want: 'upgrade',
      reason: /→/,
    },
    'major up → skip': {
      installed: '1.2.0',
      target: '2.0.0',
      want: 'skip',
      reason: /changes the major version/,
    },
    'forced downgrade → upgrade': {
      installed: '2.0.0',
      target: '1.0.0',
      force: true,
      want: 'upgrade',
      reason: /forced/,
    },
    'forced same version → upgrade': {
      installed: '1.0.0',
      target: '1.0.0',
      force: true,
      want: 'upgrade',
      reason: /forced/,
    },
    'installed not semver → skip': {
      installed: 'latest',
      target: '1.0.0',
      want: 'skip',
      reason: /^installed version latest is not semver$/,
    },
    'target not semver → skip': {
      installed: '1.0.0',
      target: 'main',
      want: 'skip',
      reason: /^target version main is not semver$/,
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const v = judgeUpgrade(tc.installed, tc.target, {
        force: tc.force ?? false,
        allowMinorJump: tc.jump ?? false,
      })
      expect(v.action).to.equal(tc.want)
      expect(v.reason).to.match(tc.reason)
    })
  }
})

describe('helm list parsing', () => {
  it('splits the chart field into name and version, prereleases and v-prefixes included', () => {
    const json = JSON.stringify([
      {
        name: 'cm',
        namespace: 'cert-manager',
        revision: '3',
        status: 'deployed',
        chart: 'cert-manager-v1.16.5',
      },
      { name: 'x', namespace: 'a', revision: '1', status: 'failed', chart: 'my-chart-2-1.0.0-rc.1' },
    ])
    expect(parseReleaseList(json)).to.deep.equal([
      { name: 'cm', namespace: 'cert-manager', version: 'v1.16.5', status: 'deployed', revision: 3 },
      { name: 'x', namespace: 'a', version: '1.0.0-rc.1', status: 'failed', revision: 1 },
    ])
  })
  it('names the entry it cannot read', () => {
    expect(() => parseReleaseList('[{"name":"a","namespace":"b","chart":"nover"}]')).to.throw(/entry 0/)
  })
})

describe('--helm-timeout', () => {
  const chart = { name: 'x', chart: '/c', version: '1.0.0', namespace: 'n' }
  // Helm gets Go's own form: it rejects `d`, which the CLI's one duration grammar adds.
  for (const [given, forHelm] of [
    ['10m', '10m0s'],
    ['90s', '1m30s'],
    ['1h30m', '1h30m0s'],
    ['1.5h', '1h30m0s'],
    ['1d', '24h0m0s'],
  ] as const)
    it(`accepts ${given} and hands Helm ${forHelm}`, () => {
      const argv = helmArgs(4).upgrade(chart, 'v.yaml', parseHelmTimeout(given))
      expect(argv[argv.indexOf('--timeout') + 1]).to.equal(forHelm)
    })
  for (const bad of ['', '10', 'ten minutes', '0s', '5 m', '-1m']) {
    it(`refuses ${JSON.stringify(bad)} naming the flag`, () =>
      expect(() => parseHelmTimeout(bad)).to.throw(/--helm-timeout .* is not a duration/))
  }
  it('refuses a timeout no timer can hold (usage error, not a bug)', () =>
    expect(() => parseHelmTimeout('600d')).to.throw(/--helm-timeout .* is too long/))
})
