import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/cli.js'
import { fakeHelmEnv, FIXTURE_CHARTS, realHelm, type FakeHelmEnv } from '../support/helm.js'

const run = promisify(execFile)

/** The first `Error:` line helm printed, and its exit code. */
async function errorOf(binary: string, args: string[], env?: NodeJS.ProcessEnv) {
  try {
    await run(binary, args, { env })
    return { code: 0, error: '' }
  } catch (err) {
    const e = err as { code?: number; stderr?: string }
    const error = (e.stderr ?? '').split('\n').find((l) => l.startsWith('Error:')) ?? ''
    return { code: e.code, error }
  }
}

// The contract fake must refuse bad arguments exactly as the real helm 4 does, so code that
// passes the fake would pass helm's argument parsing too.
describe('FakeHelm (contract fake) against the real helm 4', function () {
  this.timeout(60_000)
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let fake: FakeHelmEnv
  let real: string
  const chart = path.join(FIXTURE_CHARTS, 'coredns', '1.0.0')

  beforeEach(async () => {
    tmp = await makeTempDir()
    fake = await fakeHelmEnv(tmp.dir, { version: 'v4.1.4' })
    real = await realHelm()
  })
  afterEach(() => tmp.cleanup())

  const sameAsHelm: Record<string, string[]> = {
    'upgrade with one argument': ['upgrade', '--install', 'x'],
    'an unknown flag': ['upgrade', 'x', chart, '--bogus'],
    'a timeout that is not a duration': ['upgrade', 'x', chart, '--timeout', 'soon'],
    'an unknown wait strategy': ['upgrade', 'x', chart, '--wait=bogus'],
    'a flag without its value': ['upgrade', 'x', chart, '--values'],
    'rollback without a release': ['rollback'],
    'status without a release': ['status'],
    'list in an unknown format': ['list', '-o', 'xml'],
  }
  for (const [name, args] of Object.entries(sameAsHelm)) {
    it(`refuses ${name} with helm's own message`, async () => {
      const want = await errorOf(real, args)
      const got = await errorOf(path.join(fake.binDir, 'helm'), args, fake.env)
      expect(want.error).to.match(/^Error: /)
      expect(got).to.deep.equal(want)
    })
  }

  const stricter: Record<string, { version: string; args: string[]; err: RegExp }> = {
    'helm 4 without --rollback-on-failure': {
      version: 'v4.1.4',
      args: ['upgrade', '--install', 'x', chart, '--wait', '--timeout', '1m'],
      err: /must pass --rollback-on-failure/,
    },
    'the deprecated --atomic on helm 4': {
      version: 'v4.1.4',
      args: ['upgrade', '--install', 'x', chart, '--atomic'],
      err: /unknown flag: --atomic/,
    },
    '--rollback-on-failure on helm 3': {
      version: 'v3.14.4',
      args: ['upgrade', '--install', 'x', chart, '--rollback-on-failure'],
      err: /unknown flag: --rollback-on-failure/,
    },
    'an upgrade that does not wait': {
      version: 'v3.14.4',
      args: ['upgrade', '--install', 'x', chart, '--atomic', '--timeout', '1m'],
      err: /must wait for readiness/,
    },
  }
  for (const [name, tc] of Object.entries(stricter)) {
    it(`refuses ${name} (the upgrade's contract)`, async () => {
      const env = { ...fake.env, FAKE_HELM_VERSION: tc.version }
      const got = await errorOf(path.join(fake.binDir, 'helm'), tc.args, env)
      expect(got.code).to.equal(1)
      expect(got.error).to.match(tc.err)
    })
  }
})
