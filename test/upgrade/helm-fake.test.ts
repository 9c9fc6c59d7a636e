import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { fakeFlags } from '../fixtures/helm-fake/flags.mjs'
import {
  fakeHelmEnv,
  FIXTURE_CHARTS,
  HELM_MAJORS,
  REAL_HELM_VERSIONS,
  realHelm,
  type FakeHelmEnv,
  type HelmMajor,
} from '../support/helm.js'

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

type FlagKind = 'boolean' | 'valued' | 'optional'

/** The flags `helm <command> --help` lists (own and global), with the kind of value each takes. */
async function realFlags(binary: string, command: string): Promise<Map<string, FlagKind>> {
  const { stdout } = await run(binary, [...command.split(' '), '--help'])
  const flags = new Map<string, FlagKind>()
  // e.g. "  -o, --output format   prints …", "      --wait WaitStrategy[=watcher]   …", "      --atomic   …"
  for (const m of stdout.matchAll(/^\s+(?:(-\w), )?(--[\w-]+)(?: (\S+))?(?: {2,}|$)/gm)) {
    const [, short, long = '', type] = m
    const kind: FlagKind = !type ? 'boolean' : type.includes('[=') ? 'optional' : 'valued'
    flags.set(long, kind)
    if (short) flags.set(short, kind)
  }
  return flags
}

// The contract fake must refuse bad arguments exactly as the real helm of the same major does, so
// code that passes the fake passes helm's argument parsing too.
for (const major of HELM_MAJORS) {
  describe(`FakeHelm (contract fake) against the real helm ${major}`, function () {
    this.timeout(60_000)
    let tmp: { dir: string; cleanup: () => Promise<void> }
    let fake: FakeHelmEnv
    let real: string
    const chart = path.join(FIXTURE_CHARTS, 'coredns', '1.0.0')

    beforeEach(async () => {
      tmp = await makeTempDir()
      fake = await fakeHelmEnv(tmp.dir, { version: REAL_HELM_VERSIONS[major] })
      real = await realHelm(major)
    })
    afterEach(() => tmp.cleanup())

    it('accepts no flag that the real helm lacks or takes with another kind of value', async () => {
      const wrong: string[] = []
      for (const [command, spec] of Object.entries(fakeFlags(major))) {
        const have = await realFlags(real, command)
        const want: Array<[string, FlagKind]> = [
          ...spec.booleans.map((f): [string, FlagKind] => [f, 'boolean']),
          ...Object.keys(spec.valued).map((f): [string, FlagKind] => [f, 'valued']),
          ...Object.keys(spec.optional).map((f): [string, FlagKind] => [f, 'optional']),
        ]
        for (const [flag, kind] of want) {
          if (have.get(flag) !== kind)
            wrong.push(
              `helm ${command} ${flag}: fake takes it as ${kind}, helm ${major} as ${have.get(flag) ?? 'unknown'}`,
            )
        }
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([])
    })

    const sameAsHelm: Record<string, { args: string[]; only?: HelmMajor }> = {
      'upgrade with one argument': { args: ['upgrade', '--install', 'x'] },
      'an unknown flag': { args: ['upgrade', 'x', chart, '--bogus'] },
      'a timeout that is not a duration': { args: ['upgrade', 'x', chart, '--timeout', 'soon'] },
      'a bad --wait value': { args: ['upgrade', 'x', chart, '--wait=bogus'] },
      'a flag without its value': { args: ['upgrade', 'x', chart, '--values'] },
      'rollback without a release': { args: ['rollback'] },
      'status without a release': { args: ['status'] },
      'list in an unknown format': { args: ['list', '-o', 'xml'] },
      'list --all (helm 4 lists every status and removed the flag)': { args: ['list', '--all'], only: 4 },
      '--rollback-on-failure on helm 3': { args: ['upgrade', 'x', chart, '--rollback-on-failure'], only: 3 },
      'get manifest with --output': { args: ['get', 'manifest', 'x', '--output', 'json'] },
    }
    for (const [name, tc] of Object.entries(sameAsHelm)) {
      if (tc.only && tc.only !== major) continue
      it(`refuses ${name} with helm's own message`, async () => {
        const want = await errorOf(real, tc.args)
        const got = await errorOf(path.join(fake.binDir, 'helm'), tc.args, fake.env)
        expect(want.error).to.match(/^Error: /)
        expect(got).to.deep.equal(want)
      })
    }
  })
}

describe('FakeHelm: stricter than helm where the upgrade contract is at stake', function () {
  this.timeout(60_000)
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let fake: FakeHelmEnv
  const chart = path.join(FIXTURE_CHARTS, 'coredns', '1.0.0')
  beforeEach(async () => {
    tmp = await makeTempDir()
    fake = await fakeHelmEnv(tmp.dir)
  })
  afterEach(() => tmp.cleanup())

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
    'an upgrade that does not wait': {
      version: 'v3.17.3',
      args: ['upgrade', '--install', 'x', chart, '--atomic', '--timeout', '1m'],
      err: /must wait for readiness/,
    },
  }
  for (const [name, tc] of Object.entries(stricter)) {
    it(`refuses ${name}`, async () => {
      const env = { ...fake.env, FAKE_HELM_VERSION: tc.version }
      const got = await errorOf(path.join(fake.binDir, 'helm'), tc.args, env)
      expect(got.code).to.equal(1)
      expect(got.error).to.match(tc.err)
    })
  }
})
