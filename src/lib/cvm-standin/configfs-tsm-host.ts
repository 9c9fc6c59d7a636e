/**
 * Serves the configfs-tsm stand-in (a TEST DOUBLE, see configfs-tsm.ts) from its own process, so a
 * node of the local cluster can read evidence from a directory another process answers in; runs
 * until SIGTERM or SIGINT, logs JSON lines.
 */
import { createLogger, serveUntilStopped, type Logger } from '../system/index.js'
import {
  startConfigfsTsmStandIn,
  type ConfigfsTsmStandIn,
  type ConfigfsTsmStandInOptions,
} from './configfs-tsm.js'

export interface ConfigfsTsmHostOptions extends ConfigfsTsmStandInOptions {
  /** Signals and exit, for tests; default the process's. */
  signals?: Parameters<typeof serveUntilStopped>[1]
}

/** Resolves once stopped by a signal; the caller builds `produce` from the SNP or TDX stand-in. */
export async function hostConfigfsTsmStandIn(opts: ConfigfsTsmHostOptions): Promise<void> {
  const log: Logger = opts.log ?? createLogger({ format: 'json', component: 'configfs-tsm-standin' })
  let standIn: ConfigfsTsmStandIn | undefined
  let stopped!: () => void
  const done = new Promise<void>((resolve) => (stopped = resolve))
  let stopping: Promise<void> | undefined
  await serveUntilStopped(
    {
      start: async () => {
        standIn = await startConfigfsTsmStandIn({ ...opts, log })
        log.info('serving a configfs-tsm stand-in (TEST DOUBLE: no confidential VM behind it)', {
          dir: opts.dir,
          provider: opts.provider,
        })
      },
      stop: () =>
        (stopping ??= (async () => {
          await standIn?.stop()
          log.info('stopped', { dir: opts.dir })
          stopped()
        })()),
      done,
    },
    opts.signals,
  )
}
