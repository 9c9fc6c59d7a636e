import { spawn } from 'node:child_process'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import type { FakeApiServer } from '../../src/lib/simulator/index.js'
import { eventually } from '../support/eventually.js'
import { FIXTURE_CHARTS, HELM_MAJORS } from '../support/helm.js'
import { COREDNS_DEPLOYMENT } from '../support/upgrade-workspace.js'
import { all, exists, outcomes, UpgradeHarness } from './harness.js'
import { type ReleaseOutcome } from '../../src/lib/upgrade/execute.js'

const COREDNS = COREDNS_DEPLOYMENT

/**
 * Makes helm's own rollback of coredns run out of time: its Deployment stays unready through the
 * upgrade and helm's rollback, and becomes ready once helm has recorded that rollback as failed,
 * as a slow cluster's would; only an explicit rollback with its own timeout then succeeds.
 */
function slowRollback(api: FakeApiServer): () => void {
  api.keepUnready(COREDNS)
  const timer = setInterval(() => {
    const rollback = api.get('v1', 'secrets', 'sh.helm.release.v1.coredns.v3', 'kube-system')
    if (rollback?.metadata.labels?.status === 'failed') api.makeReady(COREDNS)
  }, 50)
  return () => clearInterval(timer)
}

describe('upgrade execute (lib): outcomes with the real helm 3 and 4 against the API fake', function () {
  this.timeout(120_000)
  const h = new UpgradeHarness()
  beforeEach(() => h.start())
  afterEach(() => h.stop())

  const cases: Record<
    string,
    {
      installed: Record<string, string>
      targets: Record<string, string>
      force?: boolean
      /** What goes wrong in the cluster; returns what undoes it. */
      fault?: (api: FakeApiServer) => void | (() => void)
      helmTimeout?: string
      retried?: boolean
      want: Record<string, ReleaseOutcome>
      deployed: Record<string, string>
      reason?: [string, RegExp]
      failedAt?: string
    }
  > = {
    'happy path: every release upgraded one minor': {
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      want: { cilium: 'upgraded', coredns: 'upgraded', 'cert-manager': 'upgraded' },
      deployed: all('1.1.0'),
    },
    'a release that is not installed is installed': {
      installed: { coredns: '1.0.0', 'cert-manager': '1.0.0' },
      targets: all('1.1.0'),
      want: { cilium: 'installed', coredns: 'upgraded', 'cert-manager': 'upgraded' },
      deployed: all('1.1.0'),
    },
    'downgrade refused, the others go on': {
      installed: { ...all('1.0.0'), coredns: '1.2.0' },
      targets: all('1.1.0'),
      want: { cilium: 'upgraded', coredns: 'skipped', 'cert-manager': 'upgraded' },
      deployed: { ...all('1.1.0'), coredns: '1.2.0' },
      reason: ['coredns', /1\.1\.0 would downgrade 1\.2\.0/],
    },
    'same version skipped': {
      installed: all('1.1.0'),
      targets: { ...all('1.1.0'), coredns: '1.2.0' },
      want: { cilium: 'skipped', coredns: 'upgraded', 'cert-manager': 'skipped' },
      deployed: { ...all('1.1.0'), coredns: '1.2.0' },
      reason: ['cilium', /already at 1\.1\.0/],
    },
    'two-minor jump refused (cilium is a named exception)': {
      installed: all('1.0.0'),
      targets: all('1.2.0'),
      want: { cilium: 'upgraded', coredns: 'skipped', 'cert-manager': 'upgraded' },
      deployed: { ...all('1.2.0'), coredns: '1.0.0' },
      reason: ['coredns', /skips 1 minor version/],
    },
    'two-minor jump and downgrade accepted with --force': {
      installed: { ...all('1.0.0'), cilium: '2.0.0' },
      targets: all('1.2.0'),
      force: true,
      want: { cilium: 'upgraded', coredns: 'upgraded', 'cert-manager': 'upgraded' },
      deployed: all('1.2.0'),
    },
    'failure in the second of three: first upgraded, second rolled back, third untouched': {
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      fault: (api) =>
        api.failOn({ method: 'PATCH', pathIncludes: 'configmaps/coredns-settings', status: 500 }),
      want: { cilium: 'upgraded', coredns: 'rolled-back', 'cert-manager': 'not-touched' },
      deployed: { ...all('1.0.0'), cilium: '1.1.0' },
      reason: ['cert-manager', /not reached: coredns failed/],
      failedAt: 'coredns',
    },
    "Helm's rollback ran out of time: an explicit rollback with its own timeout": {
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      fault: slowRollback,
      helmTimeout: '3s',
      want: { cilium: 'upgraded', coredns: 'rolled-back', 'cert-manager': 'not-touched' },
      deployed: { ...all('1.0.0'), cilium: '1.1.0' },
      reason: ['coredns', /left the release failed; rolled back to 1\.0\.0 with its own timeout/],
      failedAt: 'coredns',
    },
    'a transient failure is retried after Helm rolled it back': {
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      fault: (api) =>
        api.failOn({
          method: 'PATCH',
          pathIncludes: 'configmaps/coredns-settings',
          status: 503,
          reason: 'ServiceUnavailable',
          message: 'the server is currently unable to handle the request',
        }),
      retried: true,
      want: { cilium: 'upgraded', coredns: 'upgraded', 'cert-manager': 'upgraded' },
      deployed: all('1.1.0'),
      reason: ['coredns', /after 2 attempts/],
    },
    'a failed install is removed by Helm and reported rolled back': {
      installed: { coredns: '1.0.0', 'cert-manager': '1.0.0' },
      targets: all('1.1.0'),
      // helm 3 creates with POST to the collection, helm 4 applies (PATCH) by name
      fault: (api) => {
        api.failOn({ method: 'POST', pathIncludes: 'namespaces/kube-system/configmaps', status: 500 })
        api.failOn({ method: 'PATCH', pathIncludes: 'configmaps/cilium-settings', status: 500 })
      },
      want: { cilium: 'rolled-back', coredns: 'not-touched', 'cert-manager': 'not-touched' },
      deployed: { coredns: '1.0.0', 'cert-manager': '1.0.0' },
      failedAt: 'cilium',
    },
  }

  for (const major of HELM_MAJORS)
    for (const [name, tc] of Object.entries(cases)) {
      it(`helm ${major}: ${name}`, async () => {
        const ws = await h.setup({ ...tc, helm: major })
        const undo = tc.fault?.(h.api)
        const report = await h
          .upgrade(ws, { force: tc.force, helmTimeout: tc.helmTimeout })
          .finally(() => undo?.())
        expect(outcomes(report)).to.deep.equal(tc.want)
        // every release deployed, at the version the case expects
        expect(await h.deployed()).to.deep.equal(tc.deployed)
        if (tc.reason) {
          const [release, pattern] = tc.reason
          expect(report.releases.find((r) => r.name === release)?.reason).to.match(pattern)
        }
        expect(report.failure?.release).to.equal(tc.failedAt)
        // §9.2: retries wait the retry interval between attempts, and only transient failures retry.
        expect(h.sleeps).to.deep.equal(tc.retried ? [7] : [])
        // Backups are made before any change, whatever happens afterwards.
        expect(report.backupDir).to.match(/constellation-upgrade\/upgrade-20260102030405-[0-9a-f]{8}$/)
        const dir = report.backupDir ?? ''
        expect(report.backup).to.deep.equal({ crds: 2, customResources: 13 })
        const changed = report.releases.filter((r) => r.outcome !== 'skipped').map((r) => r.name)
        expect((await readdir(path.join(dir, 'helm-charts'))).sort()).to.deep.equal([...changed].sort())
      })
    }

  for (const major of HELM_MAJORS)
    it(`helm ${major}: a release a killed helm left pending-upgrade is skipped, the others go on`, async () => {
      const ws = await h.setup({ helm: major, installed: all('1.0.0'), targets: all('1.1.0') })
      // an operator's helm upgrade waits for coredns, and dies (killed) while it waits
      h.api.keepUnready(COREDNS)
      const values = path.join(h.dir, 'values.yaml')
      await writeFile(values, '{}\n')
      const helm = await h.realHelm()
      // SIGKILL: on SIGTERM helm would record the release failed itself
      const running = spawn(
        'helm',
        [
          'upgrade',
          'coredns',
          path.join(FIXTURE_CHARTS, 'coredns/1.1.0'),
          '-n',
          'kube-system',
          '--wait',
          '--timeout',
          '60s',
          '--values',
          values,
          '--kubeconfig',
          h.kubeconfigFile,
        ],
        { env: h.env, stdio: 'ignore' },
      )
      const gone = new Promise((resolve) => running.on('close', resolve))
      try {
        await eventually('the upgrade to be pending', async () => {
          const list = await helm.listReleases()
          return list.find((r) => r.name === 'coredns' && r.status === 'pending-upgrade')
        })
      } finally {
        running.kill('SIGKILL')
        await gone
      }
      h.api.makeReady(COREDNS)
      const report = await h.upgrade(ws)
      expect(outcomes(report)).to.deep.equal({
        cilium: 'upgraded',
        coredns: 'skipped',
        'cert-manager': 'upgraded',
      })
      expect(report.releases.find((r) => r.name === 'coredns')?.reason).to.equal(
        'release is pending-upgrade: another Helm operation owns it',
      )
      expect(await h.deployed()).to.deep.equal({
        cilium: '1.1.0',
        coredns: '1.1.0 pending-upgrade',
        'cert-manager': '1.1.0',
      })
    })

  it('writes the backup layout of §9.3 and hands helm the computed values', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    const report = await h.upgrade(ws)
    const dir = report.backupDir ?? ''
    const crd = await readFile(
      path.join(dir, 'backups/crds/certificates.fixture.constellation.invalid.yaml'),
      'utf8',
    )
    expect(crd)
      .to.match(/kind: CustomResourceDefinition/)
      .and.match(/apiVersion: apiextensions.k8s.io\/v1/)
    const cr = path.join(dir, 'backups/fixture.constellation.invalid/v1/ns-3/Certificate/cert-00003.yaml')
    expect(await readFile(cr, 'utf8')).to.match(/commonName: host-3.example/)
    const clusterScoped = path.join(
      dir,
      'backups/fixture.constellation.invalid/v1/ClusterIssuer/self-signed.yaml',
    )
    expect(await exists(clusterScoped)).to.be.true
    for (const file of [
      'overrides.yaml',
      'rendered.yaml',
      'installed-values.yaml',
      'installed-manifest.yaml',
    ]) {
      expect(await exists(path.join(dir, 'helm-charts/coredns', file)), file).to.be.true
    }
    // Values may hold secrets: they go to helm as a 0600 file in a 0700 folder, never in argv.
    expect((await stat(path.join(dir, 'helm-charts/coredns/overrides.yaml'))).mode & 0o777).to.equal(0o600)
    expect((await stat(dir)).mode & 0o777).to.equal(0o700)
    // values reach helm only as the 0600 file: the release's values are the computed ones
    const helm = await h.realHelm()
    expect(await helm.userValues('coredns', 'kube-system')).to.deep.equal({
      service: { clusterIP: '10.96.0.10' },
    })
    expect(await helm.userValues('cilium', 'kube-system')).to.include({
      k8sServiceHost: '10.0.0.5',
      k8sServicePort: 6443,
    })
    const rendered = await readFile(path.join(dir, 'helm-charts/cert-manager/rendered.yaml'), 'utf8')
    expect(rendered)
      .to.match(/kind: CustomResourceDefinition/)
      .and.match(/app.kubernetes.io\/version: "1.1.0"/)
  })
})
