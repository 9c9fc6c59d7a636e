/**
 * The REAL kubectl against a fresh Kubernetes API contract fake: a temp dir with the fake's
 * kubeconfig, a HOME and XDG dirs of its own (kubectl and helm cache and configure there), and the
 * long-running kubectl processes a test starts (watches), killed on stop.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { runProcess } from '../../src/lib/system/process.js'
import { FakeApiServer } from '../../src/lib/simulator/index.js'
import { expect } from './chai.js'
import { realKubectl } from './helm.js'
import { makeTempDir, type TempDir } from './temp.js'

export class KubectlHarness {
  private readonly children = new Set<ChildProcess>()

  private constructor(
    readonly tmp: TempDir,
    readonly api: FakeApiServer,
    readonly kubeconfig: string,
    readonly env: NodeJS.ProcessEnv,
    private readonly timeoutMs: number,
  ) {}

  static async start(opts: { timeoutMs: number }): Promise<KubectlHarness> {
    const tmp = await makeTempDir()
    const api = await new FakeApiServer().start()
    const kubeconfig = path.join(tmp.dir, 'kubeconfig')
    await writeFile(kubeconfig, api.kubeconfig(), { mode: 0o600 })
    const home = path.join(tmp.dir, 'home')
    await mkdir(home)
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CACHE_HOME: home,
      XDG_CONFIG_HOME: home,
      XDG_DATA_HOME: home,
    }
    return new KubectlHarness(tmp, api, kubeconfig, env, opts.timeoutMs)
  }

  readonly kubectl = async (...args: string[]) =>
    runProcess(await realKubectl(), ['--kubeconfig', this.kubeconfig, ...args], {
      env: this.env,
      timeoutMs: this.timeoutMs,
    })

  /** kubectl that must succeed: its stdout. */
  readonly ok = async (...args: string[]) => {
    const r = await this.kubectl(...args)
    expect(r.code, `kubectl ${args.join(' ')}: ${r.stderr}`).to.equal(0)
    return r.stdout
  }

  readonly apply = async (yaml: string) => {
    const file = path.join(this.tmp.dir, `manifest-${Date.now()}-${Math.random()}.yaml`)
    await writeFile(file, yaml)
    return this.ok('apply', '-f', file)
  }

  /** A long-running kubectl (a watch): its output so far; killed on stop. */
  readonly background = async (...args: string[]) => {
    const child = spawn(await realKubectl(), ['--kubeconfig', this.kubeconfig, ...args], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.children.add(child)
    const out = { stdout: '', stderr: '' }
    child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()))
    return out
  }

  async stop(): Promise<void> {
    for (const child of this.children) {
      if (child.exitCode !== null || child.signalCode !== null) continue
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    }
    this.children.clear()
    await this.api.stop()
    await this.tmp.cleanup()
  }
}
