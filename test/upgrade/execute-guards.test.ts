import path from 'node:path'
import { readFile, writeFile } from 'node:fs/promises'
import { workspacePaths } from '../../src/lib/paths.js'
import { createRunner, type Runner } from '../../src/lib/system/index.js'
import { createClusterReader, prepareUpgrade } from '../../src/lib/upgrade/index.js'
import { expect } from '../support/chai.js'
import { all, exists, outcomes, UpgradeHarness } from './harness.js'

describe('upgrade execute (lib): guards before any change, helm detection (real helm 3, API fake)', function () {
  this.timeout(60_000)
  const h = new UpgradeHarness()
  beforeEach(() => h.start())
  afterEach(() => h.stop())

  it('dry run changes nothing and writes no backup', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    const before = h.api.requests.length
    const report = await h.upgrade(ws, { dryRun: true, yes: false })
    expect(outcomes(report)).to.deep.equal({
      cilium: 'would-upgrade',
      coredns: 'would-upgrade',
      'cert-manager': 'would-upgrade',
    })
    expect(report.backupDir).to.be.undefined
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    expect(await h.deployed()).to.deep.equal(all('1.0.0'))
    // the plan reads what the cluster runs (helm too); a dry run writes nothing
    expect(h.api.requests.slice(before).filter((r) => r.method !== 'GET')).to.deep.equal([])
  })

  it('without a TTY and without --yes it refuses before changing anything', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    await expect(h.upgrade(ws, { yes: false })).to.be.rejectedWith(
      /without confirmation: this is not an interactive terminal/,
    )
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    expect(await h.deployed()).to.deep.equal(all('1.0.0'))
  })

  it('asks on a TTY; "no" changes nothing', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    const questions: string[] = []
    const confirm = async (q: string) => (questions.push(q), false)
    const report = await h.upgrade(ws, { yes: false, deps: { confirm } })
    expect(questions).to.have.length(1)
    expect(report.declined).to.be.true
    expect(outcomes(report)).to.deep.equal({
      cilium: 'not-touched',
      coredns: 'not-touched',
      'cert-manager': 'not-touched',
    })
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
  })

  it('an interrupt says what is left: before any change, while backing up', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    let describe: () => string[] = () => []
    const said: string[][] = []
    let handedBack = false
    const onInterrupt = (d: () => string[]) => ((describe = d), () => void (handedBack = true))
    const confirm = async () => (said.push(describe()), true)
    const openReader = () => {
      said.push(describe())
      return createClusterReader(h.kubeConfig())
    }
    await h.upgrade(ws, { yes: false, deps: { onInterrupt, confirm, openReader } })
    expect(said[0]).to.deep.equal(['Upgrade interrupted before any change: nothing was changed.'])
    expect(said[1]?.[0]).to.equal('Upgrade interrupted while backing up: nothing was changed.')
    expect(said[1]?.[1]).to.match(/^Partial backup folder: .*constellation-upgrade\/upgrade-/)
    expect(handedBack).to.be.true
  })

  it('a failed backup stops the upgrade before any release changes', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    h.api.failOn({ pathIncludes: '/certificates', status: 403 })
    await expect(h.upgrade(ws)).to.be.rejectedWith(
      /backing up before the upgrade failed; nothing was changed/,
    )
    expect(await h.deployed()).to.deep.equal(all('1.0.0'))
  })

  const flagCases: Record<string, { major: 3 | 4; want: string[]; not: string }> = {
    'helm 3: --atomic --wait': { major: 3, want: ['--atomic', '--wait'], not: '--rollback-on-failure' },
    'helm 4: --rollback-on-failure --wait=watcher': {
      major: 4,
      want: ['--rollback-on-failure', '--wait=watcher'],
      not: '--atomic',
    },
  }
  for (const [name, tc] of Object.entries(flagCases)) {
    it(`chooses the rollback flags by the detected version (${name})`, async () => {
      const ws = await h.setup({ helm: tc.major, installed: all('1.0.0'), targets: all('1.1.0') })
      const calls: string[][] = []
      const real = createRunner()
      const runner: Runner = {
        run: (file, args, opts) => (calls.push([...args]), real.run(file, args, opts)),
      }
      await h.upgrade(ws, { runner })
      const upgrades = calls.filter((c) => c[0] === 'upgrade')
      expect(upgrades).to.have.length(3)
      for (const call of upgrades) {
        expect(call).to.include.members([...tc.want, '--install', '--timeout', '2m0s'])
        expect(call).to.not.include(tc.not)
      }
      expect(await h.deployed()).to.deep.equal(all('1.1.0'))
    })
  }

  it('a missing helm is a clear error', async () => {
    const ws = await h.setup({ installed: {}, targets: all('1.1.0') })
    const env = { ...h.env, PATH: path.join(h.dir, 'empty') }
    await expect(
      prepareUpgrade(
        { workspace: ws, force: false },
        { runner: createRunner(), env, openReader: () => createClusterReader(h.kubeConfig()) },
      ),
    ).to.be.rejectedWith(/helm was not found on PATH/)
  })

  it('an unsupported helm is a clear error', async () => {
    const ws = await h.setup({ helm: 'fake', installed: {}, targets: all('1.1.0'), helmVersion: 'v2.17.0' })
    await expect(h.upgrade(ws)).to.be.rejectedWith(/helm v2.17.0 is not supported/)
  })

  it('refuses a local chart whose version is not the pinned one', async () => {
    const ws = await h.setup({ installed: {}, targets: all('1.1.0') })
    const config = workspacePaths(ws).config
    const text = await readFile(config, 'utf8')
    await writeFile(
      config,
      text.replace('coredns/1.1.0\n      version: 1.1.0', 'coredns/1.1.0\n      version: 1.2.0'),
    )
    await expect(h.upgrade(ws)).to.be.rejectedWith(
      /chart .*coredns\/1.1.0 holds version 1.1.0, but the config pins 1.2.0/,
    )
  })

  it('with nothing to change it neither asks nor backs up', async () => {
    const ws = await h.setup({ installed: all('1.1.0'), targets: all('1.1.0') })
    const report = await h.upgrade(ws, { yes: false })
    expect(outcomes(report)).to.deep.equal({
      cilium: 'skipped',
      coredns: 'skipped',
      'cert-manager': 'skipped',
    })
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
  })

  it('retries a transient failure 3 times, 30 s apart (§9.2), then reports the rollback', async () => {
    const ws = await h.setup({ installed: all('1.0.0'), targets: all('1.1.0') })
    // every upgrade of cilium is refused as the API server is busy; helm's rollbacks go through
    h.api.failOn({
      method: 'PATCH',
      pathIncludes: 'configmaps/cilium-settings',
      bodyIncludes: 'cilium 1.1.0',
      status: 503,
      reason: 'ServiceUnavailable',
      message: 'the server is currently unable to handle the request',
      times: 4,
    })
    const sleeps: number[] = []
    const said: string[] = []
    const report = await h.upgrade(ws, {
      deps: {
        retry: { sleep: async (ms) => void sleeps.push(ms) },
        progress: async (steps) => {
          for (const s of steps) await s.run((line) => said.push(`${s.title}: ${line}`))
        },
      },
    })
    expect(sleeps).to.deep.equal([30_000, 30_000, 30_000])
    // every retry says which attempt of how many failed, why, what Helm left, and the wait
    expect(said).to.have.length(3)
    said.forEach((line, i) =>
      expect(line).to.match(
        new RegExp(
          `^Upgrade cilium 1\\.1\\.0: attempt ${i + 1} of 4 failed: .*the server is currently unable to handle the request.*; trying again in 30s \\(Helm rolled the release back\\)$`,
        ),
      ),
    )
    expect(report.releases[0]).to.include({ name: 'cilium', outcome: 'rolled-back', attempts: 4 })
    expect(report.failure?.error).to.match(/the server is currently unable to handle the request/)
    expect(await h.deployed()).to.deep.equal(all('1.0.0'))
  })
})
