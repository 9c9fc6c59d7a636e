/** Runs the built CLI as a real child process, the way an operator or a script does. */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const CLI = path.join(REPO_ROOT, 'bin/run.js')
/** CONSTELL_TEST_CLI=dev runs the sources through bin/dev.mjs (no build); CI runs the build. */
export const CLI_ARGS =
  process.env.CONSTELL_TEST_CLI === 'dev' ? ['--import', 'tsx', path.join(REPO_ROOT, 'bin/dev.mjs')] : [CLI]

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  cwd?: string
  env?: NodeJS.ProcessEnv
  input?: string
  timeoutMs?: number
  /** Kills the child (SIGTERM) when aborted, e.g. a daemon the test no longer needs. */
  signal?: AbortSignal
  /**
   * Runs the child as systemd runs a unit (KillMode=control-group): in a process group of its own,
   * every process in it gets the SIGTERM, and what is left once the main process exits is killed.
   * Without it, a child the CLI started (kubeadm) outlives a stopped daemon and writes into a
   * node root the test has already removed.
   */
  asUnit?: boolean
}

export function runCli(args: readonly string[], opts: RunOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI_ARGS, ...args], {
      cwd: opts.cwd ?? REPO_ROOT,
      env: { ...process.env, CONSTELL_NO_SPINNER: '1', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: opts.asUnit === true,
    })
    const kill = (signal: NodeJS.Signals) => {
      if (!opts.asUnit || child.pid === undefined) return void child.kill(signal)
      try {
        process.kill(-child.pid, signal)
      } catch {
        // the group is gone already
      }
    }
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => kill('SIGKILL'), opts.timeoutMs ?? 60_000)
    const stop = () => kill('SIGTERM')
    opts.signal?.addEventListener('abort', stop, { once: true })
    if (opts.asUnit) child.on('exit', () => kill('SIGKILL'))
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      opts.signal?.removeEventListener('abort', stop)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(opts.input ?? '')
  })
}

/**
 * Node's argv that runs `args` through oclif, as bin/run.js does for any command line it does not
 * answer itself. oclif is given the project's root: from bin/ it would take bin/package.json.
 */
export function throughOclifArgv(args: readonly string[]): string[] {
  const script = `const { execute } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist/cli.js'))});
await execute({ dir: ${JSON.stringify(REPO_ROOT)}, args: ${JSON.stringify(args)} })`
  return ['--input-type=module', '-e', script]
}

/**
 * The built CLI as a child the test can signal; `result` resolves when it exits. `oclif` runs the
 * command line through oclif, as bin/run.js does for anything but plain init flags.
 */
export function spawnCli(args: readonly string[], opts: { env?: NodeJS.ProcessEnv; oclif?: boolean } = {}) {
  const argv = opts.oclif ? throughOclifArgv(args) : [...CLI_ARGS, ...args]
  const child: ChildProcess = spawn(process.execPath, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, CONSTELL_NO_SPINNER: '1', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const result = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
  return { child, result, stdout: () => stdout }
}
