/**
 * Helm's reading of a failed helm process: the runner's CommandFailedError told in helm's words,
 * quoting what helm printed (printable), and whether helm itself blamed the cluster.
 */
import { CommandFailedError, type CommandFailure } from '../../system/index.js'
import { printable } from './printable.js'

/** How much of helm's output an error quotes. */
const ERROR_TAIL_LINES = 5

/**
 * `helm list exited with code 1: …` or `helm upgrade did not finish within 4 s and was stopped; …`
 * for a helm that ran; any other error (helm never started) passes unchanged.
 */
export function inHelmWords(err: unknown, boundMs: number): unknown {
  if (!(err instanceof CommandFailedError) || err.exitCode === undefined) return err
  return new CommandFailedError(err, { message: helmFailureMessage(err, boundMs) })
}

export function helmFailureMessage(f: CommandFailure, boundMs: number): string {
  const [command = '', object = ''] = f.args
  const what = `helm ${command}${command === 'get' || command === 'show' ? ` ${object}` : ''}`
  const said = printable((f.stderr || f.stdout).trim())
    .split('\n')
    .slice(-ERROR_TAIL_LINES)
    .join('\n')
  return f.timedOut
    ? `${what} did not finish within ${boundMs / 1000} s and was stopped${said ? `; it said: ${said}` : ''}`
    : `${what} exited with code ${f.exitCode ?? 'signal'}${said ? `: ${said}` : ''}`
}

const said = (err: CommandFailedError) => `${err.stderr}\n${err.stdout}`

/** helm could not load the kubeconfig: the operator's file, not the cluster (it says "unreachable" too). */
export const helmRefusedKubeconfig = (err: unknown): boolean =>
  err instanceof CommandFailedError && /error loading config file/i.test(said(err))

/** Helm itself said it could not reach the cluster. */
export const helmSaidUnreachable = (err: unknown): boolean =>
  err instanceof CommandFailedError && /cluster unreachable/i.test(said(err)) && !helmRefusedKubeconfig(err)
