/** Runs a program and fails with a typed error naming the command and exit code; built on runProcess. */
import { isErrnoException } from '../errors/index.js'
import { runProcess, type ProcessOptions, type ProcessResult, type RunProcess } from './process.js'

/** What consumers need from subprocesses; tests put a spy in its place to see every argv. */
export interface Runner {
  /** Resolves with the output when the program exits 0; rejects with CommandFailedError otherwise. */
  run(file: string, args: readonly string[], opts?: ProcessOptions): Promise<ProcessResult>
}

const STDERR_TAIL_CHARS = 2_000

export class CommandFailedError extends Error {
  constructor(
    readonly command: string,
    readonly args: readonly string[],
    /** null when a signal or the timeout ended it, undefined when it never started. */
    readonly exitCode: number | null | undefined,
    readonly stdout: string,
    readonly stderr: string,
    opts?: ErrorOptions,
  ) {
    const what = [command, ...args].join(' ')
    const how =
      exitCode === undefined
        ? 'could not be started'
        : exitCode === null
          ? 'was killed'
          : `exited with code ${exitCode}`
    const tail = stderr.trim().slice(-STDERR_TAIL_CHARS)
    super(`${what} ${how}${tail ? `: ${tail}` : ''}`, opts)
    this.name = 'CommandFailedError'
  }
}

export function createRunner(spawnProcess: RunProcess = runProcess): Runner {
  return {
    async run(file, args, opts) {
      let result: ProcessResult
      try {
        result = await spawnProcess(file, args, opts)
      } catch (err) {
        const why = isErrnoException(err, 'ENOENT')
          ? 'no such program'
          : isErrnoException(err, 'EACCES')
            ? 'not executable'
            : ''
        throw new CommandFailedError(file, args, undefined, '', why, { cause: err })
      }
      if (result.code !== 0)
        throw new CommandFailedError(file, args, result.code, result.stdout, result.stderr)
      return result
    },
  }
}
