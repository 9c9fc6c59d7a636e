/**
 * `constellation init` without the CLI framework. Loading oclif and its plugin manifests is about
 * 90 ms of every init, a third of the CLI's share of the operator's wait, while init's flags are
 * few and fixed. Anything but those flags goes to oclif, which owns help and usage errors for the
 * same command (src/commands/init.ts); both run src/wiring/init.ts's runInit and print the same output.
 */
import { parseArgs } from 'node:util'
import { checkWorkspaceFolder } from './workspace-flag.js'
import { print, printJson, printToStderr, reportFailure } from './entry-output.js'
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
      initWarnings(result).forEach(printToStderr)
    }
  } catch (err) {
    reportFailure(err, flags.json)
  } finally {
    exitAfterGrace() // as BaseCommand does: a connect the kernel still retries must not hold the result
  }
  return true
}
