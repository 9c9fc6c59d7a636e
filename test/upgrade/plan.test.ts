import { renderPlan } from '../../src/lib/upgrade/index.js'
import { expect } from '../support/chai.js'
import { planUpgrade } from '../../src/lib/upgrade/plan.js'
import { type InstalledRelease } from '../../src/lib/upgrade/helm.js'
import { type ReleaseTarget } from '../../src/lib/upgrade/releases.js'

const target = (name: string, version: string, namespace = 'kube-system'): ReleaseTarget => ({
  name,
  chart: name,
  repository: 'https://charts.example',
  version,
  namespace,
  values: {},
  allowMinorJump: false,
})
const installed = (
  name: string,
  version: string,
  status = 'deployed',
  namespace = 'kube-system',
): InstalledRelease => ({
  name,
  namespace,
  version,
  status,
  revision: 3,
})

describe('upgrade plan', () => {
  it('gives each release its installed version and verdict, in the pinned order', () => {
    const plan = planUpgrade(
      [target('a', '1.1.0'), target('b', '1.1.0'), target('c', '1.1.0')],
      [installed('c', '1.0.0'), installed('a', '1.1.0'), installed('unrelated', '9.9.9')],
      { force: false },
    )
    expect(plan.releases.map((r) => [r.target.name, r.installed, r.verdict.action])).to.deep.equal([
      ['a', '1.1.0', 'skip'],
      ['b', undefined, 'install'],
      ['c', '1.0.0', 'upgrade'],
    ])
    expect(renderPlan(plan)).to.match(/^RELEASE\s+NAMESPACE\s+INSTALLED\s+TARGET\s+VERDICT\n/)
    expect(renderPlan(plan)).to.match(/b\s+kube-system\s+-\s+1\.1\.0\s+install: not installed/)
  })

  for (const status of ['pending-upgrade', 'pending-rollback', 'pending-install']) {
    it(`skips a release that is ${status}, even with --force`, () => {
      const plan = planUpgrade([target('a', '1.1.0')], [installed('a', '1.0.0', status)], { force: true })
      expect(plan.releases[0]?.verdict).to.deep.equal({
        action: 'skip',
        reason: `release is ${status}: another Helm operation owns it`,
      })
    })
  }

  it('upgrades a release whose last revision failed', () => {
    const plan = planUpgrade([target('a', '1.1.0')], [installed('a', '1.0.0', 'failed')], { force: false })
    expect(plan.releases[0]?.verdict.action).to.equal('upgrade')
  })

  it('refuses a release installed in another namespace than planned, naming both', () => {
    expect(() =>
      planUpgrade([target('a', '1.1.0', 'kube-system')], [installed('a', '1.0.0', 'deployed', 'other')], {
        force: false,
      }),
    ).to.throw(/release a is installed in namespace other, but the plan expects kube-system/)
  })
})
