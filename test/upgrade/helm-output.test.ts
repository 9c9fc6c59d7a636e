import { chainMessage, exitCodeOf, hintOf } from '../../src/lib/errors/index.js'
import { renderReport } from '../../src/lib/upgrade/index.js'
import { expect } from '../support/chai.js'
import { readFakeHelmState } from '../support/helm.js'
import { all, UpgradeHarness } from './harness.js'
import { printable } from '../../src/lib/helm/binary/printable.js'

/** Control characters a terminal would act on (newline and tab are text). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

describe('printable', () => {
  const cases: Record<string, [string, string]> = {
    'keeps text, newlines and tabs': ['a\tb\nc ✔', 'a\tb\nc ✔'],
    'escapes ESC, BEL and CR': ['\u001b[2J\u0007x\r', '\\x1b[2J\\x07x\\x0d'],
    'escapes C1 controls and DEL': ['\u009b31m\u007f', '\\x9b31m\\x7f'],
    'escapes bidi overrides': ['a\u202eb', 'a\\u202eb'],
  }
  for (const [name, [input, want]] of Object.entries(cases))
    it(name, () => expect(printable(input)).to.equal(want))
})

// Helm's output is quoted in errors and reports; whatever it prints must reach the terminal as
// text, and helm's own error must survive when what follows it (status) is garbage.
describe('upgrade: helm output on its way to the terminal', function () {
  this.timeout(60_000)
  const h = new UpgradeHarness()
  beforeEach(() => h.start())
  afterEach(() => h.stop())

  it('control characters in helm errors are shown escaped in the report', async () => {
    const ws = await h.setup({
      helm: 'fake',
      installed: all('1.0.0'),
      targets: all('1.1.0'),
      fail: 'cilium:hostile',
    })
    const report = await h.upgrade(ws)
    expect(report.failure?.error).to.include('\\x1b[2J')
    expect(report.failure?.error).to.not.match(RAW_CONTROL)
    expect(renderReport(report)).to.not.match(RAW_CONTROL)
    expect(JSON.stringify(report)).to.not.match(/\\u001b|\u009b/)
  })

  it("garbage from helm status keeps helm's upgrade error and status stderr; no blind rollback", async () => {
    const ws = await h.setup({ helm: 'fake', installed: all('1.0.0'), targets: all('1.1.0'), fail: 'cilium' })
    const report = await h.upgrade(ws, { env: { FAKE_HELM_GARBAGE: 'status' } })
    expect(report.failure?.error).to.match(
      /UPGRADE FAILED: release cilium failed, and has been rolled back .*; reading the release status afterwards failed: helm status cilium printed no JSON status: .*; helm said: Error: status output broken/,
    )
    expect(report.failure?.error).to.not.match(RAW_CONTROL)
    expect(report.releases[0]).to.include({ outcome: 'rollback-failed' })
    expect(report.releases[0]?.reason).to.match(
      /status could not be read .*helm status cilium -n kube-system/,
    )
    const calls = (await readFakeHelmState(h.fakeHelm.stateDir)).calls
    expect(calls.filter((c) => c[0] === 'rollback')).to.deep.equal([])
  })

  it('garbage from helm list is an error quoting it escaped (exit 1, no blame on the cluster)', async () => {
    const ws = await h.setup({ helm: 'fake', installed: all('1.0.0'), targets: all('1.1.0') })
    const err: unknown = await h.upgrade(ws, { env: { FAKE_HELM_GARBAGE: 'list' } }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(chainMessage(err)).to.match(
      /reading the installed Helm releases: helm list printed no JSON: .*\\u001b\[2J/,
    )
    expect(chainMessage(err)).to.not.match(RAW_CONTROL)
    expect(exitCodeOf(err)).to.equal(1)
    expect(hintOf(err)).to.not.match(/reachable/)
  })
})
