/**
 * The node's systemd units without the CLI framework: `constellation joinservice`, `keyservice`,
 * `verifyservice`, `upgrade-agent` and `state-disk setup`, as their units start them (`--config
 * FILE`). Loading oclif would cost each service ~10 MB resident for its whole life (DESIGN §6: ≤ 80
 * MB), and `state-disk setup`, which runs at every boot before anything else, ~0.1 s of CPU. Anything
 * but the plain flags goes to oclif, which owns help and usage errors for the same commands.
 */
import { parseArgs } from 'node:util'
import { exitCodeOf, renderError } from './lib/errors/index.js'
import { NODE_CONFIG_PATH } from './lib/paths.js'

/** The flags of each service, as node:util's parseArgs reads them; the oclif commands have the same. */
export const SERVICE_FLAGS = { config: { type: 'string' } } as const
/** `state-disk setup`'s flags: `--simulate-mapping` is mini's (hosts without device-mapper). */
export const STATE_DISK_FLAGS = { ...SERVICE_FLAGS, 'simulate-mapping': { type: 'boolean' } } as const

/** A unit's run, given its config file and the flags parseArgs read (each unit reads its own). */
type Run = (configPath: string, flags: Record<string, unknown>) => Promise<void>

type UnitFlags = typeof SERVICE_FLAGS | typeof STATE_DISK_FLAGS

/** Only the chosen unit's wiring is loaded. */
const UNITS: Record<string, { flags: UnitFlags; load(): Promise<Run> }> = {
  joinservice: {
    flags: SERVICE_FLAGS,
    load: async () => (await import('./wiring/joinservice.js')).runJoinService,
  },
  keyservice: {
    flags: SERVICE_FLAGS,
    load: async () => (await import('./wiring/keyservice.js')).runKeyService,
  },
  verifyservice: {
    flags: SERVICE_FLAGS,
    load: async () => (await import('./wiring/verify-service.js')).runVerifyService,
  },
  'upgrade-agent': {
    flags: SERVICE_FLAGS,
    load: async () => (await import('./wiring/upgrade-agent.js')).runUpgradeAgent,
  },
  'state-disk setup': {
    flags: STATE_DISK_FLAGS,
    load: async () => {
      const { runStateDiskSetup } = await import('./wiring/state-disk.js')
      return async (configPath, flags) => {
        await runStateDiskSetup(configPath, { simulateMapping: flags['simulate-mapping'] === true })
      }
    },
  },
}

export const FRAMEWORK_FREE_UNITS = Object.keys(UNITS)

/** Runs unit `id` for its plain flags; false when argv needs oclif (help, bad flags). */
export async function runWithoutFramework(argv: string[], id: string): Promise<boolean> {
  const unit = UNITS[id]
  if (!unit) return false
  let flags: { config?: string } & Record<string, unknown>
  try {
    flags = parseArgs({ args: argv, options: unit.flags, strict: true }).values
  } catch {
    return false
  }
  try {
    await (
      await unit.load()
    )(flags.config ?? NODE_CONFIG_PATH, flags)
  } catch (err) {
    for (const line of renderError(err).lines) process.stderr.write(`${line}\n`)
    process.exitCode = exitCodeOf(err)
  }
  return true
}
