import { spawn } from 'node:child_process'
import { access, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { workspacePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { runCliOnTerminal } from '../support/terminal.js'
import { CLI_ARGS, REPO_ROOT, runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import { createRunner } from '../../src/lib/system/index.js'
import { Helm } from '../../src/lib/helm/index.js'
import { eventually } from '../support/eventually.js'
import { HELM_MAJORS, realHelmEnv } from '../support/helm.js'
import { freePort } from '../support/ports.js'
import { processesMentioning } from '../support/processes.js'
import {
  COREDNS_DEPLOYMENT,
  installFixtureReleases,
  makeUpgradeWorkspace,
  seedCustomResources,
} from '../support/upgrade-workspace.js'

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  )

const PROMPT = 'Upgrade the releases above?'

/** The built CLI as a child the test can signal; `exited` turns true once it is gone. */
function startCli(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [...CLI_ARGS, ...args], {
    cwd: REPO_ROOT,
    env: { ...env, CONSTELL_NO_SPINNER: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let gone = false
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      gone = true
      resolve({ code, stdout, stderr })
    }),
  )
  return { child, done, exited: () => gone }
}

/** Polls until `ready` (a file appears, …); fails early when the CLI already exited. */
async function waitFor(ready: () => Promise<boolean>, exited: () => boolean): Promise<void> {
  while (!(await ready())) {
    if (exited()) throw new Error('the CLI exited before the awaited point')
    await new Promise((r) => setTimeout(r, 50))
  }
}

// The CLI as operators run it: a child process, the real helm 4 on PATH, the API fake as the cluster.
describe('constellation upgrade (CLI)', function () {
  this.timeout(90_000)
  let api: FakeApiServer
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let env: NodeJS.ProcessEnv
  let helm: Helm
  let ws: string
  const COREDNS = COREDNS_DEPLOYMENT

  beforeEach(async () => {
    api = await startFakeApiServer()
    tmp = await makeTempDir()
    ws = await makeUpgradeWorkspace(
      path.join(tmp.dir, 'ws'),
      { cilium: '1.1.0', coredns: '1.1.0', 'cert-manager': '1.1.0' },
      api,
    )
    env = { ...process.env, ...(await realHelmEnv(tmp.dir, 4)) }
    helm = await Helm.detect({
      runner: createRunner(),
      binary: 'helm',
      env,
      kubeconfig: workspacePaths(ws).adminConf,
    })
    await installFixtureReleases(helm, { cilium: '1.0.0', coredns: '1.0.0', 'cert-manager': '1.0.0' })
    seedCustomResources(api, 5)
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  const deployed = async () => Object.fromEntries((await helm.listReleases()).map((r) => [r.name, r.version]))
  const unchanged = { cilium: '1.0.0', coredns: '1.0.0', 'cert-manager': '1.0.0' }

  /**
   * helm will wait for coredns's Deployment, which stays unready: `waiting` says when it does.
   * `release` lets it become ready and waits until no helm the CLI started runs any more: it
   * finishes, or it got the terminal's Ctrl-C too (one process group) and cancelled, or the
   * closing terminal's hangup ended it.
   */
  function holdCoredns() {
    api.keepUnready(COREDNS)
    return {
      waiting: async () =>
        api.get('v1', 'secrets', 'sh.helm.release.v1.coredns.v2', 'kube-system') !== undefined,
      release: async () => {
        api.makeReady(COREDNS)
        await eventually('the helm the CLI left to be gone', async () =>
          (await processesMentioning(workspacePaths(ws).adminConf)).length === 0 ? true : undefined,
        )
      },
    }
  }

  it('upgrade check prints the plan, and --json gives it as data', async () => {
    const text = await runCli(['upgrade', 'check', '-C', ws], { env })
    expect(text.code, text.stderr).to.equal(0)
    expect(text.stdout).to.match(/coredns\s+kube-system\s+1\.0\.0\s+1\.1\.0\s+upgrade: 1\.0\.0 → 1\.1\.0/)
    const json = await runCli(['upgrade', 'check', '-C', ws, '--json'], { env })
    const plan = JSON.parse(json.stdout) as { releases: Array<{ name: string; verdict: string }> }
    expect(plan.releases.map((r) => [r.name, r.verdict])).to.deep.equal([
      ['cilium', 'upgrade'],
      ['coredns', 'upgrade'],
      ['cert-manager', 'upgrade'],
    ])
  })

  it('execute without a TTY and without --yes is a usage error (exit 2) and changes nothing', async () => {
    const r = await runCli(['upgrade', 'execute', '--helm', '-C', ws], { env })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/refusing to upgrade without confirmation: this is not an interactive terminal/)
    expect(r.stderr).to.match(/--yes/)
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    expect(await deployed()).to.deep.equal(unchanged)
  })

  it('execute --yes --json reports upgraded, rolled back and untouched releases and the backup (exit 1)', async () => {
    api.failOn({ method: 'PATCH', pathIncludes: 'configmaps/coredns-settings', status: 500 })
    const r = await runCli(
      ['upgrade', 'execute', '--helm', '--yes', '--json', '-C', ws, '--helm-timeout', '3m'],
      { env },
    )
    expect(r.code, r.stderr).to.equal(1)
    const report = JSON.parse(r.stdout) as {
      backupDir: string
      backup: { crds: number; customResources: number }
      releases: Array<{ name: string; outcome: string }>
      failure: { release: string }
      error: { message: string; exitCode: number }
    }
    // one rendering for every failure: the report, and beside it the error that says where it stopped
    expect(report.error).to.deep.include({
      message: 'upgrade stopped at coredns; see the report',
      exitCode: 1,
    })
    expect(report.releases.map((x) => [x.name, x.outcome])).to.deep.equal([
      ['cilium', 'upgraded'],
      ['coredns', 'rolled-back'],
      ['cert-manager', 'not-touched'],
    ])
    expect(report.failure.release).to.equal('coredns')
    expect(report.backup).to.deep.equal({ crds: 2, customResources: 6 })
    expect(path.dirname(report.backupDir)).to.equal(workspacePaths(ws).upgradeDir)
    expect(await readdir(path.join(report.backupDir, 'backups'))).to.include.members([
      'crds',
      'fixture.constellation.invalid',
    ])
  })

  it('execute --dry-run prints the plan and the would-be result, and changes nothing', async () => {
    const r = await runCli(['upgrade', 'execute', '--helm', '--dry-run', '-C', ws], { env })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.match(/cilium\s+would-upgrade\s+dry run: planned/)
    expect(r.stdout).to.match(/Dry run: nothing was changed/)
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
  })

  const answers: Record<string, { answer: string; want: RegExp; deployed: string }> = {
    'on a terminal it asks; "n" changes nothing': {
      answer: 'n',
      want: /Upgrade declined: nothing was changed/,
      deployed: '1.0.0',
    },
    'on a terminal it asks; "y" backs up and upgrades with live progress': {
      answer: 'y',
      want: /✔ Upgrade cilium 1\.1\.0[\s\S]*Backup folder: /,
      deployed: '1.1.0',
    },
  }
  for (const [name, tc] of Object.entries(answers)) {
    it(name, async () => {
      const r = await runCliOnTerminal(['upgrade', 'execute', '--helm', '-C', ws], env, {
        when: PROMPT,
        keys: `${tc.answer}\r`,
      })
      expect(r.output).to.include(PROMPT)
      expect(r.code, r.output).to.equal(0)
      expect(r.output).to.match(tc.want, JSON.stringify(r.output))
      expect(await deployed()).to.deep.equal({
        cilium: tc.deployed,
        coredns: tc.deployed,
        'cert-manager': tc.deployed,
      })
    })
  }

  it('Ctrl-C at the confirmation prompt aborts: nothing changed, exit 130', async () => {
    const r = await runCliOnTerminal(['upgrade', 'execute', '--helm', '-C', ws], env, {
      when: PROMPT,
      keys: '\u0003',
    })
    expect(r.output).to.include(PROMPT)
    expect(r.code, r.output).to.equal(130)
    expect(r.output).to.match(/upgrade: aborted, nothing changed/)
    expect(r.output).to.not.match(/This is a bug/)
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    expect(await deployed()).to.deep.equal(unchanged)
  })

  const signals: Record<string, { signal: 'SIGINT' | 'SIGTERM'; code: number }> = {
    'Ctrl-C (SIGINT)': { signal: 'SIGINT', code: 130 },
    SIGTERM: { signal: 'SIGTERM', code: 143 },
  }
  for (const [name, tc] of Object.entries(signals)) {
    it(`${name} during the upgrade prints the partial report and the backup folder, exit ${tc.code}`, async () => {
      const coredns = holdCoredns()
      const cli = startCli(['upgrade', 'execute', '--helm', '--yes', '-C', ws], env)
      try {
        await waitFor(coredns.waiting, cli.exited)
        cli.child.kill(tc.signal)
        const r = await cli.done
        expect(r.code, r.stderr).to.equal(tc.code)
        expect(r.stderr).to.match(/Upgrade interrupted; releases so far:/)
        expect(r.stderr).to.match(/cilium: upgraded \(1\.0\.0 → 1\.1\.0\)/)
        expect(r.stderr).to.match(/coredns: in progress: .*helm status coredns -n kube-system/)
        expect(r.stderr).to.match(/cert-manager: not touched/)
        const folder = /Backup folder: (\S+)/.exec(r.stderr)?.[1] ?? ''
        expect(path.dirname(folder)).to.equal(workspacePaths(ws).upgradeDir)
        expect(await exists(path.join(folder, 'backups', 'crds'))).to.be.true
        expect(r.stderr).to.not.match(/This is a bug/)
      } finally {
        cli.child.kill('SIGKILL')
        await cli.done
        await coredns.release()
      }
    })
  }

  it('Ctrl-C on a terminal during the upgrade (spinners on) still prints the partial report, exit 130', async () => {
    const coredns = holdCoredns()
    try {
      // listr2 holds back what is written to stderr while it draws; the report must get out anyway
      const r = await runCliOnTerminal(['upgrade', 'execute', '--helm', '--yes', '-C', ws], env, {
        when: coredns.waiting, // helm is waiting for coredns
        keys: '\u0003',
      })
      expect(r.code, r.output).to.equal(130)
      expect(r.output).to.match(/Upgrade interrupted; releases so far:/)
      expect(r.output).to.match(/cilium: upgraded \(1\.0\.0 → 1\.1\.0\)/)
      expect(r.output).to.match(/Backup folder: /)
    } finally {
      await coredns.release()
    }
  })

  const usage: Record<string, { args: string[]; env?: NodeJS.ProcessEnv; code: number; err: RegExp }> = {
    'execute without --helm is a usage error': { args: [], code: 2, err: /pass --helm/ },
    'a bad --helm-timeout names the flag': {
      args: ['--helm', '--helm-timeout', 'soon'],
      code: 2,
      err: /--helm-timeout "soon" is not a duration/,
    },
    'a missing helm is a clear error': {
      args: ['--helm', '--yes'],
      env: { PATH: '/nonexistent' },
      code: 1,
      err: /helm was not found on PATH/,
    },
  }
  for (const [name, tc] of Object.entries(usage)) {
    it(name, async () => {
      const r = await runCli(['upgrade', 'execute', '-C', ws, ...tc.args], {
        env: { ...env, ...tc.env },
      })
      expect(r.code).to.equal(tc.code)
      expect(r.stderr).to.match(tc.err)
    })
  }
})

// The real helm 3 and 4 on PATH, and a cluster that is not there: the documented exit code 3,
// a hint about reachability (helm said so), and nothing written.
describe('constellation upgrade (CLI) with the real helm, cluster unreachable', function () {
  this.timeout(90_000)
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let ws: string
  beforeEach(async () => {
    tmp = await makeTempDir()
    ws = await makeUpgradeWorkspace(path.join(tmp.dir, 'ws'), {
      cilium: '1.1.0',
      coredns: '1.1.0',
      'cert-manager': '1.1.0',
    })
    const closed = await freePort()
    await writeFile(workspacePaths(ws).adminConf, unreachableKubeconfig(closed), { mode: 0o600 })
  })
  afterEach(() => tmp.cleanup())

  for (const major of HELM_MAJORS) {
    for (const command of [['check'], ['execute', '--helm', '--yes']]) {
      it(`upgrade ${command[0]} with helm ${major} exits 3 with a reachability hint`, async () => {
        const env = await realHelmEnv(path.join(tmp.dir, command[0] ?? ''), major)
        const r = await runCli(['upgrade', ...command, '-C', ws], { env })
        expect(r.code, r.stderr).to.equal(3)
        expect(r.stderr).to.match(
          /reading the installed Helm releases: helm list exited with code 1: .*cluster unreachable/i,
        )
        expect(r.stderr).to.match(/Hint: check that the cluster in .* is reachable/)
        expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
      })
    }
  }
})

describe('constellation upgrade (CLI) with the real helm, a kubeconfig that is not one', function () {
  this.timeout(60_000)
  it('exits 1 naming the file and the line, and blames the file, not the cluster', async () => {
    const tmp = await makeTempDir()
    try {
      const env = await realHelmEnv(tmp.dir, 4)
      const bad = path.join(tmp.dir, 'bad.conf')
      await writeFile(bad, 'not: [yaml\n', { mode: 0o600 })
      const r = await runCli(['upgrade', 'check', '-C', tmp.dir, '--kubeconfig', bad], { env })
      expect(r.code, r.stderr).to.equal(1)
      expect(r.stderr).to.match(/error loading config file ".*bad\.conf": yaml: line 1/)
      expect(r.stderr).to.include(`Hint: ${bad} is not a kubeconfig helm can load`)
    } finally {
      await tmp.cleanup()
    }
  })
})

function unreachableKubeconfig(port: number): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: gone, cluster: {server: "https://127.0.0.1:${port}"}}]`,
    'users: [{name: gone, user: {token: unused}}]',
    'contexts: [{name: gone, context: {cluster: gone, user: gone}}]',
    'current-context: gone',
  ].join('\n')
}
