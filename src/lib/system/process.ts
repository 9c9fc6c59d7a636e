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
  signal?: AbortSignal
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
      signal: opts.signal,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
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
          child.kill('SIGKILL')
        }, opts.timeoutMs)
      : undefined
    timer?.unref()
    // A grandchild may hold the pipes open after a killed child: stop waiting for its output then.
    child.on('exit', () => {
      if (timedOut) for (const s of [child.stdout, child.stderr]) s.destroy()
    })
    child.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      const out = { code, stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() }
      resolve(timedOut ? { ...out, timedOut } : out)
    })
  })
