import { access, readdir, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { workspacePaths } from '../../src/lib/paths.js'
import { runProcess } from '../../src/lib/system/index.js'
import {
  createClusterReader,
  executeUpgrade,
  prepareUpgrade,
  type ExecuteDeps,
  type ReleaseOutcome,
  type UpgradeReport,
} from '../../src/lib/upgrade/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/cli.js'
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver.js'
import { fakeHelmEnv, readFakeHelmState, seedReleases, type FakeHelmEnv } from '../support/helm.js'
import { makeUpgradeWorkspace, RELEASE_NAMESPACES, seedCustomResources } from './workspace.js'

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  )

describe('upgrade execute (lib) with the helm contract fake and FakeApiServer', function () {
  this.timeout(60_000)
  let api: FakeApiServer
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let helm: FakeHelmEnv
  let sleeps: number[]

  beforeEach(async () => {
    api = await startFakeApiServer()
    seedCustomResources(api, 12)
    tmp = await makeTempDir()
    sleeps = []
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  function deps(over: Partial<ExecuteDeps> = {}): ExecuteDeps {
    const kc = new KubeConfig()
    kc.loadFromString(api.kubeconfig())
    return {
      openReader: () => createClusterReader(kc),
      progress: async (steps) => {
        for (const s of steps) await s.run()
      },
      now: () => new Date('2026-01-02T03:04:05Z'),
      retry: { intervalMs: 7, sleep: async (ms) => void sleeps.push(ms) },
      ...over,
    }
  }

  async function setup(opts: {
    installed: Record<string, string>
    targets: Record<string, string>
    fail?: string
    helmVersion?: string
  }) {
    const ws = await makeUpgradeWorkspace(path.join(tmp.dir, 'ws'), opts.targets, api)
    helm = await fakeHelmEnv(tmp.dir, { fail: opts.fail, version: opts.helmVersion })
    await seedReleases(
      helm.stateDir,
      Object.entries(opts.installed).map(([name, version]) => ({
        name,
        version,
        namespace: RELEASE_NAMESPACES[name] ?? 'default',
      })),
    )
    return ws
  }

  async function upgrade(
    ws: string,
    o: { force?: boolean; dryRun?: boolean; yes?: boolean; deps?: Partial<ExecuteDeps> } = {},
  ): Promise<UpgradeReport> {
    const prepared = await prepareUpgrade(
      { workspace: ws, force: o.force ?? false },
      { run: runProcess, env: helm.env },
    )
    return executeUpgrade(
      prepared,
      { workspace: ws, yes: o.yes ?? true, dryRun: o.dryRun ?? false, helmTimeout: '2m' },
      deps(o.deps),
    )
  }

  const outcomes = (r: UpgradeReport) => Object.fromEntries(r.releases.map((x) => [x.name, x.outcome]))
  const all = (v: string) => ({ cilium: v, coredns: v, 'cert-manager': v })

  const cases: Record<
    string,
    {
      installed: Record<string, string>
      targets: Record<string, string>
      force?: boolean
      fail?: string
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
      fail: 'coredns',
      want: { cilium: 'upgraded', coredns: 'rolled-back', 'cert-manager': 'not-touched' },
      deployed: { ...all('1.0.0'), cilium: '1.1.0' },
      reason: ['cert-manager', /not reached: coredns failed/],
      failedAt: 'coredns',
    },
    "Helm's rollback ran out of time: an explicit rollback with its own timeout": {
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      fail: 'coredns:rollback-timeout',
      want: { cilium: 'upgraded', coredns: 'rolled-back', 'cert-manager': 'not-touched' },
      deployed: { ...all('1.0.0'), cilium: '1.1.0' },
      reason: ['coredns', /left the release pending-rollback; rolled back to 1\.0\.0/],
      failedAt: 'coredns',
    },
    'a transient failure is retried after Helm rolled it back': {
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      fail: 'coredns:transient-once',
      want: { cilium: 'upgraded', coredns: 'upgraded', 'cert-manager': 'upgraded' },
      deployed: all('1.1.0'),
      reason: ['coredns', /after 2 attempts/],
    },
    'a failed install is removed by Helm and reported rolled back': {
      installed: { coredns: '1.0.0', 'cert-manager': '1.0.0' },
      targets: all('1.1.0'),
      fail: 'cilium',
      want: { cilium: 'rolled-back', coredns: 'not-touched', 'cert-manager': 'not-touched' },
      deployed: { coredns: '1.0.0', 'cert-manager': '1.0.0' },
      failedAt: 'cilium',
    },
  }

  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const ws = await setup(tc)
      const report = await upgrade(ws, { force: tc.force })
      expect(outcomes(report)).to.deep.equal(tc.want)
      const state = await readFakeHelmState(helm.stateDir)
      const deployed = Object.fromEntries(Object.values(state.releases).map((r) => [r.name, r.version]))
      expect(deployed).to.deep.equal(tc.deployed)
      for (const r of Object.values(state.releases)) expect(r.status).to.equal('deployed')
      if (tc.reason) {
        const [release, pattern] = tc.reason
        expect(report.releases.find((r) => r.name === release)?.reason).to.match(pattern)
      }
      expect(report.failure?.release).to.equal(tc.failedAt)
      // §9.2: retries wait the retry interval between attempts, and only transient failures retry.
      expect(sleeps).to.deep.equal(tc.fail?.endsWith(':transient-once') ? [7] : [])
      // Backups are made before any change, whatever happens afterwards.
      expect(report.backupDir).to.match(/constellation-upgrade\/upgrade-20260102030405-[0-9a-f]{8}$/)
      const dir = report.backupDir ?? ''
      expect(report.backup).to.deep.equal({ crds: 2, customResources: 13 })
      const changed = report.releases.filter((r) => r.outcome !== 'skipped').map((r) => r.name)
      expect((await readdir(path.join(dir, 'helm-charts'))).sort()).to.deep.equal([...changed].sort())
    })
  }

  it('writes the backup layout of §9.3 and hands helm the computed values', async () => {
    const ws = await setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    const report = await upgrade(ws)
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
    const upgradeCalls = (await readFakeHelmState(helm.stateDir)).calls.filter((c) => c[0] === 'upgrade')
    for (const call of upgradeCalls) expect(call.join(' ')).to.not.match(/--set|10\.96\.0\.10/)
    const rendered = await readFile(path.join(dir, 'helm-charts/cert-manager/rendered.yaml'), 'utf8')
    expect(rendered)
      .to.match(/kind: CustomResourceDefinition/)
      .and.match(/app.kubernetes.io\/version: "1.1.0"/)
    const { releases } = await readFakeHelmState(helm.stateDir)
    expect(releases['kube-system/coredns']?.values).to.deep.equal({ service: { clusterIP: '10.96.0.10' } })
    expect(releases['kube-system/cilium']?.values).to.include({
      k8sServiceHost: '10.0.0.5',
      k8sServicePort: 6443,
    })
  })

  it('dry run changes nothing and writes no backup', async () => {
    const ws = await setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    const report = await upgrade(ws, { dryRun: true, yes: false })
    expect(outcomes(report)).to.deep.equal({
      cilium: 'would-upgrade',
      coredns: 'would-upgrade',
      'cert-manager': 'would-upgrade',
    })
    expect(report.backupDir).to.be.undefined
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    const state = await readFakeHelmState(helm.stateDir)
    expect(state.events).to.deep.equal([])
    expect(state.calls.map((c) => c[0])).to.not.include.members(['upgrade', 'rollback'])
    expect(api.requests).to.deep.equal([])
  })

  it('without a TTY and without --yes it refuses before changing anything', async () => {
    const ws = await setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    await expect(upgrade(ws, { yes: false })).to.be.rejectedWith(
      /without confirmation: this is not an interactive terminal/,
    )
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    expect((await readFakeHelmState(helm.stateDir)).events).to.deep.equal([])
  })

  it('asks on a TTY; "no" changes nothing', async () => {
    const ws = await setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    const questions: string[] = []
    const confirm = async (q: string) => (questions.push(q), false)
    const report = await upgrade(ws, { yes: false, deps: { confirm } })
    expect(questions).to.have.length(1)
    expect(report.declined).to.be.true
    expect(outcomes(report)).to.deep.equal({
      cilium: 'not-touched',
      coredns: 'not-touched',
      'cert-manager': 'not-touched',
    })
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
  })

  it('a failed backup stops the upgrade before any release changes', async () => {
    const ws = await setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    api.failOn({ pathIncludes: '/certificates', status: 403 })
    await expect(upgrade(ws)).to.be.rejectedWith(/backing up before the upgrade failed; nothing was changed/)
    expect((await readFakeHelmState(helm.stateDir)).events).to.deep.equal([])
  })

  const flagCases: Record<string, { version: string; want: string[]; not: string }> = {
    'helm 3: --atomic --wait': {
      version: 'v3.14.4',
      want: ['--atomic', '--wait'],
      not: '--rollback-on-failure',
    },
    'helm 4: --rollback-on-failure --wait=watcher': {
      version: 'v4.1.4',
      want: ['--rollback-on-failure', '--wait=watcher'],
      not: '--atomic',
    },
  }
  for (const [name, tc] of Object.entries(flagCases)) {
    it(`chooses the rollback flags by the detected version (${name})`, async () => {
      const ws = await setup({ installed: all('1.0.0'), targets: all('1.1.0'), helmVersion: tc.version })
      await upgrade(ws)
      const upgrades = (await readFakeHelmState(helm.stateDir)).calls.filter((c) => c[0] === 'upgrade')
      expect(upgrades).to.have.length(3)
      for (const call of upgrades) {
        expect(call).to.include.members([...tc.want, '--install', '--timeout', '2m'])
        expect(call).to.not.include(tc.not)
      }
    })
  }

  it('a missing helm is a clear error', async () => {
    const ws = await setup({ installed: {}, targets: all('1.1.0') })
    const env = { ...helm.env, PATH: path.join(tmp.dir, 'empty') }
    await expect(
      prepareUpgrade({ workspace: ws, force: false }, { run: runProcess, env }),
    ).to.be.rejectedWith(/helm was not found on PATH/)
  })

  it('an unsupported helm is a clear error', async () => {
    const ws = await setup({ installed: {}, targets: all('1.1.0'), helmVersion: 'v2.17.0' })
    await expect(upgrade(ws)).to.be.rejectedWith(/helm v2.17.0 is not supported/)
  })

  it('refuses a local chart whose version is not the pinned one', async () => {
    const ws = await setup({ installed: {}, targets: all('1.1.0') })
    const config = workspacePaths(ws).config
    const text = await readFile(config, 'utf8')
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(
        config,
        text.replace('coredns/1.1.0\n      version: 1.1.0', 'coredns/1.1.0\n      version: 1.2.0'),
      ),
    )
    await expect(upgrade(ws)).to.be.rejectedWith(
      /chart .*coredns\/1.1.0 holds version 1.1.0, but the config pins 1.2.0/,
    )
  })
})
