import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { chainMessage, exitCodeOf } from '../../src/lib/errors/index.js'
import { createClusterReader } from '../../src/lib/upgrade/index.js'
import { expect } from '../support/chai.js'
import { startSilentApiServer, type SilentApiServer } from '../../src/lib/simulator/fake-apiserver-silent.js'
import { readFakeHelmState } from '../support/helm.js'
import { all, UpgradeHarness } from './harness.js'

// Short enough for a test, long enough that a loaded machine still starts the fake within them.
const HANG_BOUNDS = { queryMs: 3_000, renderMs: 30_000, marginMs: 3_000 }
const UPGRADE_BOUNDS = { queryMs: 30_000, renderMs: 30_000, marginMs: 2_000 }

/** Whether the process the fake recorded as hanging is gone (killed at its bound). */
async function hungHelmIsGone(stateDir: string, command: string): Promise<boolean> {
  const pid = Number(await readFile(path.join(stateDir, `hanging-${command}.pid`), 'utf8'))
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

// Every wait has a bound: a helm that hangs is killed with a clear error, and an API server
// that accepts and never answers fails the backup (exit 3), instead of hanging the CLI.
describe('upgrade: bounded waits for helm and the API server', function () {
  this.timeout(60_000)
  const h = new UpgradeHarness()
  beforeEach(() => h.start())
  afterEach(() => h.stop())

  const hangs: Record<string, { command: string; err: RegExp; exitCode: number }> = {
    'helm version': {
      command: 'version',
      err: /reading the helm version: helm version did not finish within 3 s and was stopped/,
      exitCode: 1,
    },
    'helm list (the cluster read: exit 3)': {
      command: 'list',
      err: /reading the installed Helm releases: helm list did not finish within 3 s and was stopped/,
      exitCode: 3,
    },
  }
  for (const [name, tc] of Object.entries(hangs)) {
    it(`a hung ${name} is killed at its bound with a clear error`, async () => {
      const ws = await h.setup({ helm: 'fake', installed: all('1.0.0'), targets: all('1.1.0') })
      const err: unknown = await h
        .upgrade(ws, { env: { FAKE_HELM_HANG: tc.command }, helmBounds: HANG_BOUNDS })
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(err).to.be.instanceOf(Error)
      expect(chainMessage(err)).to.match(tc.err)
      expect(exitCodeOf(err)).to.equal(tc.exitCode)
      expect(await hungHelmIsGone(h.fakeHelm.stateDir, tc.command)).to.be.true
    })
  }

  it('a hung helm upgrade is killed at twice --helm-timeout (its own rollback) plus the margin', async () => {
    const ws = await h.setup({ helm: 'fake', installed: all('1.0.0'), targets: all('1.1.0') })
    const report = await h.upgrade(ws, {
      env: { FAKE_HELM_HANG: 'upgrade' },
      helmBounds: UPGRADE_BOUNDS,
      helmTimeout: '1s',
    })
    expect(report.failure?.release).to.equal('cilium')
    expect(report.failure?.error).to.match(/helm upgrade did not finish within 4 s and was stopped/)
    expect(report.releases.map((r) => r.outcome)).to.deep.equal(['rolled-back', 'not-touched', 'not-touched'])
    expect(report.releases[0]?.reason).to.equal(
      'helm was stopped at its time bound; the release is deployed at 1.0.0',
    )
    expect(await hungHelmIsGone(h.fakeHelm.stateDir, 'upgrade')).to.be.true
    const upgrades = (await readFakeHelmState(h.fakeHelm.stateDir)).calls.filter((c) => c[0] === 'upgrade')
    expect(upgrades).to.have.length(1) // a killed helm is not retried
  })

  describe('backup against an API server that accepts and never answers', () => {
    let silent: SilentApiServer
    beforeEach(async () => (silent = await startSilentApiServer()))
    afterEach(() => silent.stop())

    it('each request times out; the backup stops with exit 3 and nothing is changed', async () => {
      const ws = await h.setup({ helm: 'fake', installed: all('1.0.0'), targets: all('1.1.0') })
      const kc = { text: silent.kubeconfig(), what: 'the silent API server kubeconfig' }
      const openReader = () =>
        createClusterReader(kc, { requestTimeoutMs: 300, attempts: 2, sleep: async () => {} })
      const err: unknown = await h.upgrade(ws, { deps: { openReader } }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(chainMessage(err)).to.match(
        /backing up before the upgrade failed; nothing was changed .*: listing customresourcedefinitions.*: the API server did not answer within 0.3 s/,
      )
      expect(exitCodeOf(err)).to.equal(3)
      expect(silent.accepted()).to.equal(2)
      expect((await readFakeHelmState(h.fakeHelm.stateDir)).events).to.deep.equal([])
    })
  })
})
