/**
 * The CLI on a pseudo-terminal (util-linux `script`), so spinners, listr2's live view and inquirer
 * prompts run as a person sees them. Keys (e.g. "y\r", or Ctrl-C "\u0003") are typed into the
 * terminal once `when` appears on it; Ctrl-C then reaches the CLI through the tty, as from a keyboard.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { CLI, REPO_ROOT } from './cli.js'

export interface TerminalRun {
  code: number | null
  /** Everything the terminal showed, colour and cursor codes removed. */
  output: string
}

/** When to type: once this text is on the terminal, or once the check says so (polled). */
export type TypeWhen = string | (() => Promise<boolean>)

export function runCliOnTerminal(
  args: string[],
  env: NodeJS.ProcessEnv,
  type: { when: TypeWhen; keys: string },
): Promise<TerminalRun> {
  const entry =
    process.env.CONSTELL_TEST_CLI === 'dev' ? ['--import', 'tsx', path.join(REPO_ROOT, 'bin/dev.mjs')] : [CLI]
  const command = [process.execPath, ...entry, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
  return new Promise((resolve, reject) => {
    // A fresh pty has no size; listr2 would wrap every character onto its own line.
    const child = spawn('script', ['-qec', `stty cols 120 rows 40; exec ${command}`, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { ...env, CONSTELL_NO_SPINNER: '' },
    })
    let output = ''
    let typed = false
    const typeKeys = () => {
      typed = true
      child.stdin.write(type.keys)
    }
    const { when } = type
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString()
      if (!typed && typeof when === 'string' && output.includes(when)) typeKeys()
    })
    const poll =
      typeof when === 'function'
        ? setInterval(() => void when().then((ready) => ready && !typed && typeKeys()), 50)
        : undefined
    const timer = setTimeout(() => child.kill('SIGKILL'), 80_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearInterval(poll)
      clearTimeout(timer)
      // eslint-disable-next-line no-control-regex -- strips the terminal's colour and cursor codes
      resolve({ code, output: output.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '') })
    })
  })
}
