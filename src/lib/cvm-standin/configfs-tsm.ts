/**
 * TEST DOUBLE at the hardware boundary: a plain directory that behaves, for requestTsmReport, as
 * the kernel's configfs-tsm report directory does on an SEV-SNP or TDX guest, with evidence from
 * `produce` (the SNP or TDX stand-in signer) instead of the secure processor. Never product behaviour.
 *
 * Where it differs from the kernel, and how a client sees it:
 * - an entry's attributes appear a moment after mkdir, generation last (the client waits for it);
 * - an input is taken when its file changes (fs.watch), the evidence is produced then, and
 *   generation advances only after outblob/auxblob are in place (each written to a temp file and
 *   renamed), by the number of writes seen: two writes in one moment count as two, as in the kernel,
 *   but two writes of the same bytes within one file-timestamp tick count as one;
 * - an empty inblob or privlevel is the truncating half of a write and is ignored;
 * - a write the kernel would fail (inblob over 64 bytes: EFBIG; privlevel out of range: EINVAL)
 *   cannot fail here: the stand-in leaves generation alone, logs a warning, and the client times
 *   out saying the provider did not take the input;
 * - when `produce` fails, outblob and auxblob are removed and generation still advances, so the
 *   client's read fails as a kernel read of outblob would;
 * - rmdir cannot remove a plain directory with files: the client removes the files (see tsm/report.ts).
 */
import { watch, type FSWatcher } from 'node:fs'
import { readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { CliError, messageOf } from '../errors/index.js'
import { createLogger, type Logger } from '../system/index.js'
import { Entry, type ConfigfsTsmStandInOptions } from './configfs-tsm-entry.js'

export type { ConfigfsTsmStandInOptions, ProduceEvidence } from './configfs-tsm-entry.js'

export interface ConfigfsTsmStandIn {
  /** Releases every watcher after the work in flight; idempotent. */
  stop(): Promise<void>
}

export async function startConfigfsTsmStandIn(opts: ConfigfsTsmStandInOptions): Promise<ConfigfsTsmStandIn> {
  const info = await stat(opts.dir).catch((cause: unknown) => {
    throw new CliError(`configfs-tsm stand-in: ${opts.dir} cannot be served`, {
      hint: 'create the directory first (mkdir -p)',
      cause,
    })
  })
  if (!info.isDirectory()) throw new CliError(`configfs-tsm stand-in: ${opts.dir} is not a directory`)
  const standIn = new StandIn(opts, opts.log ?? createLogger({ level: 'error', write: () => {} }))
  await standIn.start()
  return standIn
}

class StandIn implements ConfigfsTsmStandIn {
  private readonly entries = new Map<string, Entry>()
  private watcher?: FSWatcher
  private scanning: Promise<void> = Promise.resolve()
  private stopping?: Promise<void>
  /** Removed entries finishing their work in flight; stop() waits for them. */
  private readonly closing = new Set<Promise<void>>()

  constructor(
    private readonly opts: ConfigfsTsmStandInOptions,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.watcher = watch(this.opts.dir, () => void this.rescan())
    this.watcher.on('error', (err) => this.log.error('watching the report directory failed', { error: err }))
    await this.rescan()
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.watcher?.close()
      await this.scanning
      await Promise.all([...this.entries.values()].map((e) => e.close()))
      this.entries.clear()
      await Promise.all(this.closing)
    })()
    return this.stopping
  }

  /** Serialized, so that two events never set one entry up twice. */
  private rescan(): Promise<void> {
    this.scanning = this.scanning
      .then(() => this.scanOnce())
      .catch((err: unknown) =>
        this.log.error('scanning the report directory failed', { error: messageOf(err) }),
      )
    return this.scanning
  }

  private async scanOnce(): Promise<void> {
    if (this.stopping) return
    const dirs = await readdir(this.opts.dir, { withFileTypes: true })
    const names = new Set(dirs.filter((d) => d.isDirectory()).map((d) => d.name))
    for (const [name, entry] of this.entries) {
      if (names.has(name)) continue
      this.entries.delete(name)
      // not awaited: a produce still running for a removed entry must not hold up new entries
      const closing = entry.close().finally(() => this.closing.delete(closing))
      this.closing.add(closing)
    }
    for (const name of names) {
      if (this.entries.has(name)) continue
      const entry = new Entry(
        path.join(this.opts.dir, name),
        this.opts,
        this.log.child('entry', { entry: name }),
      )
      this.entries.set(name, entry)
      await entry.open()
    }
  }
}
