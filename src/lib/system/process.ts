/**
 * Spawns a program with an argument array (no shell) and collects its output: the primitive under
 * `Runner` (runner.ts), which is what lib code uses. Tests that want the raw exit code use it directly.
 */
import { spawn } from 'node:child_process'

export interface ProcessResult {
  /** Exit code, or null when a signal ended the process. */
  code: number | null
  stdout: string
  stderr: string
  /** Set when the process was killed because it ran past `timeoutMs`. */
  timedOut?: boolean
}

export interface ProcessOptions {
  env?: NodeJS.ProcessEnv
  cwd?: string
  /** Kills the process (SIGKILL) after this long; the result then has code null. */
  timeoutMs?: number
  /** Ends the program (SIGTERM; with `ownSession`, its whole process group). */
  signal?: AbortSignal
  /**
   * Runs it as the leader of a session of its own, out of reach of the terminal's Ctrl-C and of
   * what its own children signal to their group; `signal` and `timeoutMs` still end it, with
   * every process of its group.
   */
  ownSession?: boolean
  /** Written to the program's stdin (then closed): how secrets reach a child, never argv. */
  input?: string | Uint8Array
}

/**
 * Resolves with the exit code and output whatever the code is; rejects only when the program
 * could not be started (ENOENT, EACCES: callers turn those into a clear error).
 */
export const runProcess = (
  file: string,
  args: readonly string[],
  opts: ProcessOptions = {},
): Promise<ProcessResult> =>
  new Promise((resolve, reject) => {
    // With `env` given, Node looks the program up on env.PATH, which is how tests inject binaries.
    const child = spawn(file, [...args], {
      env: opts.env,
      cwd: opts.cwd,
      signal: opts.ownSession ? undefined : opts.signal,
      detached: opts.ownSession,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const kill = (signal: NodeJS.Signals) => {
      if (!opts.ownSession || child.pid === undefined) child.kill(signal)
      else
        try {
          process.kill(-child.pid, signal)
        } catch {
          // ESRCH: the group is gone already
        }
    }
    const onAbort = () => kill('SIGTERM')
    if (opts.ownSession) opts.signal?.addEventListener('abort', onAbort, { once: true })
    if (opts.ownSession && opts.signal?.aborted) onAbort()
    child.stdin.on('error', () => {}) // a program that exits without reading stdin is not our error
    child.stdin.end(opts.input ?? '')
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    child.stdout.on('data', (d: Buffer) => stdout.push(d))
    child.stderr.on('data', (d: Buffer) => stderr.push(d))
    let timedOut = false
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true
          kill('SIGKILL')
        }, opts.timeoutMs)
      : undefined
    timer?.unref()
    // A grandchild may hold the pipes open after a killed child: stop waiting for its output then.
    child.on('exit', () => {
      if (timedOut) for (const s of [child.stdout, child.stderr]) s.destroy()
    })
    const settled = () => {
      clearTimeout(timer)
      opts.signal?.removeEventListener('abort', onAbort)
    }
    child.on('error', (err) => {
      settled()
      reject(err)
    })
    child.on('close', (code) => {
      settled()
      const out = { code, stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() }
      resolve(timedOut ? { ...out, timedOut } : out)
    })
  })
