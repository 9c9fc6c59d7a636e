/**
 * The node's long-running services without the CLI framework: `constellation joinservice`,
 * `keyservice`, `verifyservice` and `upgrade-agent`, as their systemd units start them (`--config FILE`). Loading
 * oclif would cost each of them ~10 MB resident for its whole life (DESIGN §6: ≤ 80 MB). Anything
 * but the plain flags goes to oclif, which owns help and usage errors for the same commands.
 */
import { parseArgs } from 'node:util'
import { exitCodeOf, renderError } from './lib/errors/index.js'
import { NODE_CONFIG_PATH } from './lib/paths.js'

/** The flags of each service, as node:util's parseArgs reads them; the oclif commands have the same. */
export const SERVICE_FLAGS = { config: { type: 'string' } } as const

/** Only the chosen service's wiring is loaded. */
const SERVICES: Record<string, () => Promise<(configPath: string) => Promise<void>>> = {
  joinservice: async () => (await import('./wiring/joinservice.js')).runJoinService,
  keyservice: async () => (await import('./wiring/keyservice.js')).runKeyService,
  verifyservice: async () => (await import('./wiring/verify-service.js')).runVerifyService,
  'upgrade-agent': async () => (await import('./wiring/upgrade-agent.js')).runUpgradeAgent,
}

export const FRAMEWORK_FREE_SERVICES = Object.keys(SERVICES)

/** Runs service `id` for `[--config F]`; false when argv needs oclif (help, bad flags). */
export async function runWithoutFramework(argv: string[], id: string): Promise<boolean> {
  const load = SERVICES[id]
  if (!load) return false
  let configPath: string
  try {
    const { values } = parseArgs({ args: argv, options: SERVICE_FLAGS, strict: true })
    configPath = values.config ?? NODE_CONFIG_PATH
  } catch {
    return false
  }
  try {
    await (
      await load()
    )(configPath)
  } catch (err) {
    for (const line of renderError(err).lines) process.stderr.write(`${line}\n`)
    process.exitCode = exitCodeOf(err)
  }
  return true
}
