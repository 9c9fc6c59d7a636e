import { planToJson, renderPlan, renderReport } from '../../src/lib/upgrade/index.js'
import { mergeValues, valueChanges } from '../../src/lib/helm/binary/values.js'
import { expect } from '../support/chai.js'
import { planChangesCluster, planUpgrade } from '../../src/lib/upgrade/plan.js'
import { CliError } from '../../src/lib/errors/index.js'
import { type InstalledRelease } from '../../src/lib/helm/binary/helm.js'
import { type ReleaseTarget } from '../../src/lib/helm/releases/releases.js'

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

  for (const status of ['pending-upgrade', 'pending-rollback', 'pending-install', 'uninstalling']) {
    it(`skips a release that is ${status}, even with --force`, () => {
      const plan = planUpgrade([target('a', '1.1.0')], [installed('a', '1.0.0', status)], { force: true })
      expect(plan.releases[0]?.verdict).to.deep.equal({
        action: 'skip',
        reason: `release is ${status}: another Helm operation owns it`,
      })
    })
  }

  it('hands --force to the rules: a forced plan upgrades across a major version', () => {
    const forced = planUpgrade([target('a', '2.0.0')], [installed('a', '1.0.0')], { force: true })
    expect(forced.force).to.equal(true)
    expect(forced.releases[0]?.verdict).to.deep.equal({
      action: 'upgrade',
      reason: 'forced: version rules skipped',
    })
    const plain = planUpgrade([target('a', '2.0.0')], [installed('a', '1.0.0')], { force: false })
    expect(plain.force).to.equal(false)
    expect(plain.releases[0]?.verdict).to.deep.equal({
      action: 'skip',
      reason: '1.0.0 → 2.0.0 changes the major version (use --force)',
    })
  })

  it("hands a release's minor-jump allowance to the rules, and only that release's", () => {
    const jumping = { ...target('a', '1.3.0'), allowMinorJump: true }
    const plan = planUpgrade(
      [jumping, target('b', '1.3.0')],
      [installed('a', '1.1.0'), installed('b', '1.1.0')],
      {
        force: false,
      },
    )
    expect(plan.releases.map((r) => r.verdict)).to.deep.equal([
      { action: 'upgrade', reason: '1.1.0 → 1.3.0' },
      {
        action: 'skip',
        reason: '1.1.0 → 1.3.0 skips 1 minor version(s); upgrade one minor at a time (or --force)',
      },
    ])
  })

  it('keeps the installed revision, what an explicit rollback goes back to', () => {
    const plan = planUpgrade([target('a', '1.1.0'), target('b', '1.1.0')], [installed('a', '1.0.0')], {
      force: false,
    })
    expect(plan.releases.map((r) => r.installedRevision)).to.deep.equal([3, undefined])
  })

  it('upgrades a release whose last revision failed', () => {
    const plan = planUpgrade([target('a', '1.1.0')], [installed('a', '1.0.0', 'failed')], { force: false })
    expect(plan.releases[0]?.verdict.action).to.equal('upgrade')
  })

  it('follows a release to the namespace it is installed in', () => {
    const plan = planUpgrade(
      [target('a', '1.1.0', 'kube-system')],
      [installed('a', '1.0.0', 'deployed', 'ops')],
      {
        force: false,
      },
    )
    expect(plan.releases.map((r) => [r.target.namespace, r.installed, r.verdict.action])).to.deep.equal([
      ['ops', '1.0.0', 'upgrade'],
    ])
    expect(renderPlan(plan)).to.match(/a\s+ops\s+1\.0\.0\s+1\.1\.0\s+upgrade/)
  })

  it('refuses a release installed twice, naming both namespaces', () => {
    expect(() =>
      planUpgrade(
        [target('a', '1.1.0')],
        [installed('a', '1.0.0', 'deployed', 'ops'), installed('a', '1.0.0', 'deployed', 'kube-system')],
        { force: false },
      ),
    )
      .to.throw(CliError, /^release a is installed twice, in namespaces ops and kube-system$/)
      .with.property(
        'hint',
        'uninstall the one the cluster does not use (`helm uninstall a -n <namespace>`), then plan again',
      )
  })

  it('changes the cluster when any release is installed or upgraded, not when all are skipped', () => {
    const plan = (installedA: string) =>
      planUpgrade(
        [target('a', '1.1.0'), target('b', '1.1.0')],
        [installed('a', installedA), installed('b', '1.1.0')],
        {
          force: false,
        },
      )
    expect(planChangesCluster(plan('1.1.0'))).to.equal(false)
    expect(planChangesCluster(plan('1.0.0'))).to.equal(true)
    expect(planChangesCluster({ releases: [], force: false })).to.equal(false)
  })

  it('shows which values the upgrade adds or changes, never the values themselves', () => {
    const plan = planUpgrade([target('a', '1.1.0')], [installed('a', '1.0.0')], { force: false })
    const before = { replicas: 3, service: { clusterIP: '10.96.0.10', port: 53 }, token: 's3cret' }
    const after = mergeValues(before, { service: { clusterIP: '10.96.0.53' }, hubble: { enabled: true } })
    expect(after).to.deep.include({ replicas: 3, token: 's3cret' })
    const changes = valueChanges(before, after)
    expect(changes).to.deep.equal({ added: ['hubble'], changed: ['service.clusterIP'] })
    plan.releases[0]!.valueChanges = changes
    const text = renderPlan(plan)
    expect(text).to.match(/a: changes service\.clusterIP; sets hubble/)
    expect(text).to.not.match(/10\.96\.0\.53|s3cret/)
    expect(planToJson(plan).releases[0]?.valueChanges).to.deep.equal(changes)
  })
})

describe('upgrade report', () => {
  it('counts the backup in words that agree with the numbers', () => {
    const report = (crds: number, customResources: number) =>
      renderReport({ dryRun: false, declined: false, releases: [], backup: { crds, customResources } })
    expect(report(1, 0)).to.include('Backed up 1 CRD and 0 custom resources.')
    expect(report(2, 1)).to.include('Backed up 2 CRDs and 1 custom resource.')
  })
})
