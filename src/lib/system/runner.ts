/**
 * The one way lib code runs a program: a `Runner` that resolves with the output when the program
 * exits 0 and rejects with a CommandFailedError otherwise. Callers with their own wording (helm)
 * reword the error; they never get a second kind of runner.
 */
import { isErrnoException, type ExternalFailure } from '../errors/index.js'
import { runProcess, type ProcessOptions } from './process.js'

export type RunOptions = ProcessOptions

export interface CommandOutput {
  stdout: string
  stderr: string
}

/** What consumers need from subprocesses; tests put a spy in its place to see every argv. */
export interface Runner {
  /** Resolves with the output when the program exits 0; rejects with CommandFailedError otherwise. */
  run(file: string, args: readonly string[], opts?: RunOptions): Promise<CommandOutput>
}

/** Everything known about a run that did not exit 0. */
export interface CommandFailure extends CommandOutput {
  command: string
  args: readonly string[]
  /** null when a signal or the timeout ended it, undefined when it never started. */
  exitCode: number | null | undefined
  /** Killed because it ran past `timeoutMs`. */
  timedOut: boolean
}

const STDERR_TAIL_CHARS = 2_000

/**
 * A program that failed, or could not start: the outside world's doing, so a failure (exit 1) where
 * nothing more specific catches it, never "a bug", and what to do when the program is missing.
 */
export class CommandFailedError extends Error implements CommandFailure, ExternalFailure {
  readonly external = true
  readonly externalHint?: string
  readonly command: string
  readonly args: readonly string[]
  readonly exitCode: number | null | undefined
  readonly stdout: string
  readonly stderr: string
  readonly timedOut: boolean

  /** `message` lets a caller tell the same failure in its own words (default: see describeFailure). */
  constructor(failure: CommandFailure, opts: ErrorOptions & { message?: string } = {}) {
    super(
      opts.message ?? describeFailure(failure),
      opts.cause === undefined ? undefined : { cause: opts.cause },
    )
    this.name = 'CommandFailedError'
    this.externalHint = hintFor(failure)
    this.command = failure.command
    this.args = failure.args
    this.exitCode = failure.exitCode
    this.stdout = failure.stdout
    this.stderr = failure.stderr
    this.timedOut = failure.timedOut
  }
}

function hintFor(f: CommandFailure): string | undefined {
  if (f.exitCode !== undefined) return undefined
  if (f.stderr === 'no such program')
    return `install ${f.command}, or put the folder that holds it on PATH (on Debian, scripts/setup.sh installs what this tool runs; some of it lives in /usr/sbin)`
  if (f.stderr === 'not executable') return `make ${f.command} executable, or put another first on PATH`
  return undefined
}

/** `<command and args> <how it ended>: <the tail of stderr>`. */
function describeFailure(f: CommandFailure): string {
  const what = [f.command, ...f.args].join(' ')
  const how =
    f.exitCode === undefined
      ? 'could not be started'
      : f.timedOut
        ? 'was killed at its time limit'
        : f.exitCode === null
          ? 'was killed'
          : `exited with code ${f.exitCode}`
  const tail = f.stderr.trim().slice(-STDERR_TAIL_CHARS)
  return `${what} ${how}${tail ? `: ${tail}` : ''}`
}

export function createRunner(): Runner {
  return {
    async run(command, args, opts) {
      let result
      try {
        result = await runProcess(command, args, opts)
      } catch (err) {
        const why = isErrnoException(err, 'ENOENT')
          ? 'no such program'
          : isErrnoException(err, 'EACCES')
            ? 'not executable'
            : ''
        const failure = { command, args, exitCode: undefined, stdout: '', stderr: why, timedOut: false }
        throw new CommandFailedError(failure, { cause: err })
      }
      const { code, stdout, stderr, timedOut = false } = result
      if (code !== 0 || timedOut)
        throw new CommandFailedError({ command, args, exitCode: code, stdout, stderr, timedOut })
      return { stdout, stderr }
    },
  }
}

/** The runner with `signal` on every run that names none: an abort ends whatever is running. */
export const runnerWithSignal = (runner: Runner, signal: AbortSignal | undefined): Runner =>
  signal ? { run: (command, args, opts) => runner.run(command, args, { signal, ...opts }) } : runner
