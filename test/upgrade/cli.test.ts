import { spawn } from 'node:child_process'
import { access, readdir } from 'node:fs/promises'
import path from 'node:path'
import { workspacePaths } from '../../src/lib/paths.js'
import { expect } from '../support/chai.js'
import { CLI, makeTempDir, REPO_ROOT, runCli } from '../support/cli.js'
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver.js'
import { fakeHelmEnv, readFakeHelmState, seedReleases, type FakeHelmEnv } from '../support/helm.js'
import { makeUpgradeWorkspace, seedCustomResources } from './workspace.js'

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  )

const PROMPT = 'Upgrade the releases above?'

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), so the inquirer prompt and listr2's live
 * view run for real; answers the prompt with `answer` and Enter once it appears.
 */
function runCliOnTerminal(args: string[], env: NodeJS.ProcessEnv, answer: string) {
  const entry =
    process.env.CONSTELL_TEST_CLI === 'dev' ? ['--import', 'tsx', path.join(REPO_ROOT, 'bin/dev.js')] : [CLI]
  const command = [process.execPath, ...entry, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    // A fresh pty has no size; listr2 would wrap every character onto its own line.
    const child = spawn('script', ['-qec', `stty cols 120 rows 40; exec ${command}`, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { ...env, CONSTELL_NO_SPINNER: '' },
    })
    let output = ''
    let answered = false
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString()
      if (!answered && output.includes(PROMPT)) {
        answered = true
        child.stdin.write(`${answer}\r`)
      }
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 80_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      // eslint-disable-next-line no-control-regex -- strips the terminal's colour and cursor codes
      resolve({ code, output: output.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '') })
    })
  })
}

// The CLI as operators run it: a child process, helm found on PATH (the contract fake).
describe('constellation upgrade (CLI)', function () {
  this.timeout(90_000)
  let api: FakeApiServer
  let tmp: { dir: string; cleanup: () => Promise<void> }
  let helm: FakeHelmEnv
  let ws: string

  beforeEach(async () => {
    api = await startFakeApiServer()
    seedCustomResources(api, 5)
    tmp = await makeTempDir()
    ws = await makeUpgradeWorkspace(
      path.join(tmp.dir, 'ws'),
      { cilium: '1.1.0', coredns: '1.1.0', 'cert-manager': '1.1.0' },
      api,
    )
    helm = await fakeHelmEnv(tmp.dir, { fail: 'coredns' })
    await seedReleases(helm.stateDir, [
      { name: 'cilium', namespace: 'kube-system', version: '1.0.0' },
      { name: 'coredns', namespace: 'kube-system', version: '1.0.0' },
      { name: 'cert-manager', namespace: 'cert-manager', version: '1.0.0' },
    ])
  })
  afterEach(async () => {
    await api.stop()
    await tmp.cleanup()
  })

  it('upgrade check prints the plan, and --json gives it as data', async () => {
    const text = await runCli(['upgrade', 'check', '-C', ws], { env: helm.env })
    expect(text.code, text.stderr).to.equal(0)
    expect(text.stdout).to.match(/coredns\s+kube-system\s+1\.0\.0\s+1\.1\.0\s+upgrade: 1\.0\.0 → 1\.1\.0/)
    const json = await runCli(['upgrade', 'check', '-C', ws, '--json'], { env: helm.env })
    const plan = JSON.parse(json.stdout) as { releases: Array<{ name: string; verdict: string }> }
    expect(plan.releases.map((r) => [r.name, r.verdict])).to.deep.equal([
      ['cilium', 'upgrade'],
      ['coredns', 'upgrade'],
      ['cert-manager', 'upgrade'],
    ])
  })

  it('execute without a TTY and without --yes stops with exit 1 and changes nothing', async () => {
    const r = await runCli(['upgrade', 'execute', '--helm', '-C', ws], { env: helm.env })
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/refusing to upgrade without confirmation: this is not an interactive terminal/)
    expect(r.stderr).to.match(/--yes/)
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
    expect((await readFakeHelmState(helm.stateDir)).events).to.deep.equal([])
  })

  it('execute --yes --json reports upgraded, rolled back and untouched releases and the backup (exit 1)', async () => {
    const r = await runCli(
      ['upgrade', 'execute', '--helm', '--yes', '--json', '-C', ws, '--helm-timeout', '3m'],
      {
        env: helm.env,
      },
    )
    expect(r.code, r.stderr).to.equal(1)
    const report = JSON.parse(r.stdout) as {
      backupDir: string
      backup: { crds: number; customResources: number }
      releases: Array<{ name: string; outcome: string }>
      failure: { release: string }
    }
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
    const r = await runCli(['upgrade', 'execute', '--helm', '--dry-run', '-C', ws], { env: helm.env })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.match(/cilium\s+would-upgrade\s+dry run: planned/)
    expect(r.stdout).to.match(/Dry run: nothing was changed/)
    expect(await exists(workspacePaths(ws).upgradeDir)).to.be.false
  })

  const answers: Record<string, { answer: string; want: RegExp; events: number }> = {
    'on a terminal it asks; "n" changes nothing': {
      answer: 'n',
      want: /Upgrade declined: nothing was changed/,
      events: 0,
    },
    'on a terminal it asks; "y" backs up and upgrades with live progress': {
      answer: 'y',
      want: /✔ Upgrade cilium 1\.1\.0[\s\S]*Backup folder: /,
      events: 3,
    },
  }
  for (const [name, tc] of Object.entries(answers)) {
    it(name, async () => {
      const env = { ...helm.env, FAKE_HELM_FAIL: '' }
      const r = await runCliOnTerminal(['upgrade', 'execute', '--helm', '-C', ws], env, tc.answer)
      expect(r.output).to.include(PROMPT)
      expect(r.code, r.output).to.equal(0)
      expect(r.output).to.match(tc.want, JSON.stringify(r.output))
      const upgraded = (await readFakeHelmState(helm.stateDir)).events.filter((e) => e.event === 'upgraded')
      expect(upgraded).to.have.length(tc.events)
    })
  }

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
        env: { ...helm.env, ...tc.env },
      })
      expect(r.code).to.equal(tc.code)
      expect(r.stderr).to.match(tc.err)
    })
  }
})
