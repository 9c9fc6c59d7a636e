/**
 * Ctrl-C and SIGTERM for operator commands. listr2 and inquirer would otherwise decide (exit 127
 * silently, or a stack trace): a command says what state it leaves, and exits 130 (SIGINT) or 143
 * (SIGTERM) as shells expect.
 */
import { writeSync } from 'node:fs'
import { CliError } from '../errors/index.js'
import { claimInterrupts, processSignalIo, SIGNAL_EXIT_CODES, type SignalIo } from '../system/index.js'

export interface InterruptIO extends SignalIo {
  stderr: (line: string) => void
}

export const processInterruptIO = (): InterruptIO => ({
  ...processSignalIo(),
  // Straight to fd 2: while listr2 draws it holds back process.stderr writes until it finishes,
  // which an exit now would never let happen. A reader that is gone (`2>&1 | cat`, whose cat took
  // the same Ctrl-C) cannot be told; the exit code still is.
  stderr: (line) => {
    try {
      writeSync(2, `${line}\n`)
    } catch {
      // nobody reads stderr any more
    }
  },
})

let pipesGuarded = false

/**
 * A closed stdout or stderr (`| head`, or a pipe whose reader took the same Ctrl-C) makes every
 * later write fail with EPIPE, which Node throws from the stream unless someone listens. A command
 * then dies in the middle of what it still has to do (mini up removing what it started), so EPIPE
 * is dropped: there is nobody left to tell. Other stream errors still throw.
 */
export function ignoreClosedPipes(): void {
  if (pipesGuarded) return
  pipesGuarded = true
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err
    })
}

/**
 * Until the returned function is called, SIGINT/SIGTERM print `describe()` (what is left behind,
 * evaluated when the signal arrives) and exit with 130/143. A second signal exits at once.
 */
export function onInterrupt(describe: () => string[], io: InterruptIO = processInterruptIO()): () => void {
  let seen = false
  // claimed, not added: while it is active no outer handler (a command's default) speaks too
  return claimInterrupts((signal) => {
    const code = SIGNAL_EXIT_CODES[signal]
    if (seen) return io.exit(code)
    seen = true
    io.stderr('')
    for (const line of describe()) io.stderr(line)
    io.exit(code)
  }, io)
}

/** The error for a prompt closed with Ctrl-C (inquirer's ExitPromptError): nothing was changed. */
export class PromptAbortedError extends CliError {
  constructor(what: string) {
    super(`${what}: aborted, nothing changed`, { exitCode: SIGNAL_EXIT_CODES.SIGINT })
    this.name = 'PromptAbortedError'
  }
}

/** Runs an inquirer prompt; Ctrl-C (or a closed terminal) becomes PromptAbortedError. */
export async function promptOrAbort<T>(what: string, prompt: () => Promise<T>): Promise<T> {
  try {
    return await prompt()
  } catch (err) {
    if (err instanceof Error && (err.name === 'ExitPromptError' || err.name === 'AbortPromptError'))
      throw new PromptAbortedError(what)
    throw err
  }
}
