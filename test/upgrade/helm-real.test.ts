import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRunner } from '../../src/lib/system/index.js'
import { runProcess } from '../../src/lib/system/process.js'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'
import { FIXTURE_CHARTS, HELM_MAJORS, REAL_HELM_VERSIONS, realHelm } from '../support/helm.js'
import { freePort } from '../support/ports.js'
import { Helm } from '../../src/lib/helm/binary/helm.js'
import { helmArgs, VERSION_ARGS, type HelmArgs } from '../../src/lib/helm/binary/helm-args.js'

/** What cobra and helm print when an argv is wrong, rather than the command failing on its merits. */
const USAGE_ERROR =
  /unknown (flag|shorthand flag|command)|flag needs an argument|invalid argument|requires (at least |exactly )?\d+ arg|accepts (at most |between )?\d+|Usage:/i

/**
 * Sample arguments for every command line the CLI can build. The mapped type makes a new builder
 * in helm-args.ts fail to compile here until it has samples, so no argv escapes this test.
 */
type Samples = { [K in keyof HelmArgs]: Array<Parameters<HelmArgs[K]>> }

function samples(chartDir: string, valuesFile: string, closedRepo: string): Samples {
  const local = { name: 'coredns', chart: chartDir, version: '1.0.0', namespace: 'kube-system' }
  const remote = { ...local, chart: 'coredns', repository: closedRepo }
  return {
    list: [[]],
    status: [['coredns', 'kube-system']],
    upgrade: [
      [local, valuesFile, 600_000],
      [remote, valuesFile, 5_400_000],
      [local, valuesFile, 600_000, { wait: false }],
      [local, '-', 600_000], // values on stdin (init's bring-up)
    ],
    rollback: [
      ['coredns', 'kube-system', 90_000],
      ['coredns', 'kube-system', 90_000, 3],
    ],
    template: [
      [local, valuesFile],
      [remote, valuesFile],
    ],
    showChart: [[chartDir]],
    getValues: [
      ['coredns', 'kube-system', 'yaml'],
      ['coredns', 'kube-system', 'json'],
    ],
    getManifest: [['coredns', 'kube-system']],
  }
}

/** Every argv of one major, labelled by builder. */
function everyArgv(args: HelmArgs, s: Samples): Array<[string, string[]]> {
  const out: Array<[string, string[]]> = [['version', [...VERSION_ARGS]]]
  for (const key of Object.keys(s) as Array<keyof HelmArgs>) {
    const build = args[key] as (...a: unknown[]) => string[]
    for (const params of s[key] as unknown[][]) out.push([key, build(...params)])
  }
  return out
}

// The real helm 3.17.3 and 4.1.4 binaries judge every command line the CLI builds. The cluster
// is a closed loopback port: each command must get past argument parsing and fail (if at all)
// only because the cluster or the chart repository cannot be reached.
describe('helm command lines against the real helm 3 and helm 4', function () {
  this.timeout(120_000)
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let env: NodeJS.ProcessEnv
  let kubeconfig: string
  let s: Samples

  before(async () => {
    tmp = await makeTempDir()
    const closed = await freePort()
    kubeconfig = path.join(tmp.dir, 'kubeconfig')
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: gone, cluster: {server: "https://127.0.0.1:${closed}"}}]`,
        'users: [{name: gone, user: {token: unused}}]',
        'contexts: [{name: gone, context: {cluster: gone, user: gone}}]',
        'current-context: gone',
      ].join('\n'),
      { mode: 0o600 },
    )
    const values = path.join(tmp.dir, 'overrides.yaml')
    await writeFile(values, 'greeting: hello\n')
    s = samples(path.join(FIXTURE_CHARTS, 'coredns', '1.0.0'), values, `http://127.0.0.1:${closed}/`)
    // helm caches repositories and config under HOME; keep them in the temp dir.
    const home = path.join(tmp.dir, 'home')
    await mkdir(home)
    env = { PATH: process.env.PATH, HOME: home, XDG_CACHE_HOME: home, XDG_CONFIG_HOME: home }
  })
  after(() => tmp.cleanup())

  for (const major of HELM_MAJORS) {
    it(`helm ${major} accepts every argv the CLI builds for it`, async () => {
      const binary = await realHelm(major)
      const refused: string[] = []
      for (const [builder, argv] of everyArgv(helmArgs(major, kubeconfig), s)) {
        const r = await runProcess(binary, argv, { env, timeoutMs: 60_000 })
        const said = `${r.stderr}\n${r.stdout}`
        const unreachable = /cluster unreachable|connection refused/i.test(r.stderr)
        if (USAGE_ERROR.test(r.stderr) || (r.code !== 0 && !unreachable))
          refused.push(`${builder}: helm ${argv.join(' ')} → ${said.trim()}`)
      }
      expect(refused, refused.join('\n')).to.deep.equal([])
    })

    it(`reads the version of the real helm ${major} and picks its flags`, async () => {
      const helm = await Helm.detect({ runner: createRunner(), binary: await realHelm(major), env })
      expect([helm.version, helm.major]).to.deep.equal([REAL_HELM_VERSIONS[major], major])
    })
  }

  it('the argv differ where the majors differ: list --all and the rollback flags', () => {
    const [v3, v4] = HELM_MAJORS.map((m) => helmArgs(m))
    expect(v3?.list()).to.include('--all')
    expect(v4?.list()).to.not.include('--all')
    const target = { name: 'x', chart: '/c', version: '1.0.0', namespace: 'n' }
    expect(v3?.upgrade(target, 'v.yaml', 60_000)).to.include.members(['--atomic', '--wait'])
    expect(v4?.upgrade(target, 'v.yaml', 60_000)).to.include.members([
      '--rollback-on-failure',
      '--wait=watcher',
    ])
  })
})
