/**
 * `constellation bootstrap run` without the CLI framework. systemd starts the node daemon with a
 * fixed command line, and loading oclif (its modules, manifests and ICU collation data) would cost
 * the daemon ~10 MB resident for its whole life. Anything but the plain flags goes to oclif, which
 * owns help and usage errors for the same command (src/commands/bootstrap/run.ts).
 */
import { parseArgs } from 'node:util'
import { exitCodeOf, renderError } from './lib/errors/index.js'
import { NODE_CONFIG_PATH } from './lib/paths.js'
import { runBootstrapService } from './wiring/bootstrapper.js'

/** The flags of `bootstrap run`, as node:util's parseArgs reads them; the oclif command has the same. */
export const DAEMON_FLAGS = { config: { type: 'string' } } as const

/** Runs the daemon for `bootstrap run [--config F]`; false when argv needs oclif (help, bad flags). */
export async function runWithoutFramework(argv: string[]): Promise<boolean> {
  let configPath: string
  try {
    const { values } = parseArgs({ args: argv, options: DAEMON_FLAGS, strict: true })
    configPath = values.config ?? NODE_CONFIG_PATH
  } catch {
    return false
  }
  try {
    await runBootstrapService(configPath)
  } catch (err) {
    for (const line of renderError(err).lines) process.stderr.write(`${line}\n`)
    process.exitCode = exitCodeOf(err)
  }
  return true
}
