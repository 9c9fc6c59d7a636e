/**
 * `constellation init` without the CLI framework. Loading oclif and its plugin manifests is about
 * 90 ms of every init, a third of the CLI's share of the operator's wait, while init's flags are
 * few and fixed. Anything but those flags goes to oclif, which owns help and usage errors for the
 * same command (src/commands/init.ts); both run src/wiring/init.ts's runInit and print the same output.
 */
import { format, parseArgs } from 'node:util'
import { checkWorkspaceFolder } from './workspace-flag.js'
import { exitCodeOf, renderError } from './lib/errors/index.js'
import { exitAfterGrace } from './lib/system/index.js'
import { DEFAULT_HELM_TIMEOUT } from './lib/helm/index.js'
import { initSummary, initWarnings } from './lib/init/index.js'
import { runInit } from './wiring/init.js'

/** The flags of `init`, as node:util's parseArgs reads them; the oclif command has the same. */
export const INIT_FLAGS = {
  workspace: { type: 'string', short: 'C', default: '.' },
  yes: { type: 'boolean', short: 'y', default: false },
  conformance: { type: 'boolean', default: false },
  'merge-kubeconfig': { type: 'boolean', default: false },
  timeout: { type: 'string', default: '5m' },
  'skip-helm': { type: 'boolean', default: false },
  'skip-helm-wait': { type: 'boolean', default: false },
  'helm-timeout': { type: 'string', default: DEFAULT_HELM_TIMEOUT },
  json: { type: 'boolean', default: false },
} as const

// What oclif's `this.log` and `logJson` write (console.log of util.format; JSON with 2 spaces).
const print = (line: string) => process.stdout.write(`${format(line)}\n`)
const printJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)

/** Runs init for plain flags; false when argv needs oclif (help, unknown flags, arguments). */
export async function runWithoutFramework(argv: string[]): Promise<boolean> {
  let flags
  try {
    flags = parseArgs({ args: argv, options: INIT_FLAGS, strict: true }).values
  } catch {
    return false
  }
  try {
    await checkWorkspaceFolder(flags.workspace)
    const result = await runInit(flags)
    if (flags.json) printJson(result)
    else {
      initSummary(result).forEach(print)
      initWarnings(result).forEach((line) => process.stderr.write(`${format(line)}\n`))
    }
  } catch (err) {
    const code = exitCodeOf(err)
    const rendered = renderError(err, code)
    // with --json the error is the JSON on stdout only, as oclif's logToStderr stays quiet then
    if (flags.json) printJson(rendered.json)
    else for (const line of rendered.lines) process.stderr.write(`${line}\n`)
    process.exitCode = code
  } finally {
    exitAfterGrace() // as BaseCommand does: a connect the kernel still retries must not hold the result
  }
  return true
}
