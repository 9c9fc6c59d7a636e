/**
 * The measurements a join service enforces, reloaded when its join-config changes: no restart, and
 * a malformed or unreadable update keeps the last good set (logged once, with why).
 */
import { watch, type FSWatcher } from 'node:fs'
import path from 'node:path'
import { JoinConfigError, parseJoinConfig, type Measurements } from '../attestation/index.js'
import { CliError, messageOf } from '../errors/index.js'
import { readRegularFile, type Logger } from '../system/index.js'

/** A re-read even without a watch event: covers filesystems without inotify and missed events. */
export const JOIN_CONFIG_POLL_INTERVAL_MS = 5_000
export const JOIN_CONFIG_MAX_BYTES = 64 * 1024

export interface MeasurementsStoreOptions {
  /** The join-config file (nodePaths(root).joinConfigFile in production). */
  file: string
  logger: Logger
  pollIntervalMs?: number
  /** Watch the file's directory for changes; off, only polling notices them. Default on. */
  watch?: boolean
}

/** What the validator asks for on every handshake. */
export interface MeasurementsSource {
  current(): Measurements
}

export class MeasurementsStore implements MeasurementsSource {
  private watcher?: FSWatcher
  private poller?: NodeJS.Timeout
  private reloading?: Promise<void>
  private reloadAgain = false
  /** The last outcome logged, so an unchanged problem is not logged on every poll. */
  private lastSeen: string

  private constructor(
    private readonly opts: MeasurementsStoreOptions,
    private measurements: Measurements,
    text: string,
  ) {
    this.lastSeen = text
  }

  /** Loads the join-config, refusing to start without a good one, then follows its changes. */
  static async open(opts: MeasurementsStoreOptions): Promise<MeasurementsStore> {
    const text = await readJoinConfig(opts.file)
    let measurements: Measurements
    try {
      measurements = parseJoinConfig(text)
    } catch (err) {
      throw new CliError(`join-config ${opts.file}: ${messageOf(err)}`, {
        hint: 'the join service enforces the measurements the operator sent at init; fix or rewrite the file',
      })
    }
    const store = new MeasurementsStore(opts, measurements, text)
    store.follow()
    opts.logger.info('Measurements loaded', { file: opts.file, pcrs: [...measurements.keys()] })
    return store
  }

  current(): Measurements {
    return this.measurements
  }

  /** Re-reads the file now; concurrent calls share one read and a change during it triggers another. Never rejects. */
  reload(): Promise<void> {
    if (this.reloading) {
      this.reloadAgain = true
      return this.reloading
    }
    this.reloading = (async () => {
      do {
        this.reloadAgain = false
        await this.reloadOnce()
      } while (this.reloadAgain)
      this.reloading = undefined
    })()
    return this.reloading
  }

  close(): void {
    this.watcher?.close()
    clearInterval(this.poller)
  }

  private follow(): void {
    const { file, logger } = this.opts
    if (this.opts.watch !== false) {
      try {
        // The directory, not the file: an atomic rename (or a ConfigMap's symlink swap) replaces
        // the inode a file watch would hold. Every event only triggers a content comparison.
        this.watcher = watch(path.dirname(file), { persistent: false }, () => void this.reload())
        this.watcher.on('error', (err) => {
          logger.warn('Watching join-config failed; polling only', { file, error: err.message })
          this.watcher?.close()
        })
      } catch (err) {
        logger.warn('Cannot watch join-config; polling only', { file, error: messageOf(err) })
      }
    }
    this.poller = setInterval(
      () => void this.reload(),
      this.opts.pollIntervalMs ?? JOIN_CONFIG_POLL_INTERVAL_MS,
    )
    this.poller.unref()
  }

  private async reloadOnce(): Promise<void> {
    const { file, logger } = this.opts
    let text: string
    try {
      text = await readJoinConfig(file)
    } catch (err) {
      const problem = `unreadable: ${messageOf(err)}`
      if (problem !== this.lastSeen)
        logger.warn('Keeping the last good measurements', { file, error: problem })
      this.lastSeen = problem
      return
    }
    if (text === this.lastSeen) return
    this.lastSeen = text
    try {
      this.measurements = parseJoinConfig(text)
    } catch (err) {
      if (!(err instanceof JoinConfigError)) throw err
      logger.warn('Keeping the last good measurements', { file, error: `malformed: ${err.message}` })
      return
    }
    logger.info('Measurements updated', { file, pcrs: [...this.measurements.keys()] })
  }
}

async function readJoinConfig(file: string): Promise<string> {
  const bytes = await readRegularFile(file, {
    maxBytes: JOIN_CONFIG_MAX_BYTES,
    what: 'join-config',
    missingHint: 'init writes it from the measurements the operator sent',
  })
  return bytes.toString('utf8')
}
