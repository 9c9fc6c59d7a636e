/** One report entry of the configfs-tsm stand-in (TEST DOUBLE, see configfs-tsm.ts): inputs in, evidence out. */
import { watch, type FSWatcher } from 'node:fs'
import path from 'node:path'
import { messageOf } from '../errors/index.js'
import type { Logger } from '../system/index.js'
import {
  TSM_INBLOB_MAX_BYTES,
  TSM_OUTBLOB_MAX_BYTES,
  TSM_PRIVLEVEL_MAX,
  type TsmProvider,
} from '../tsm/index.js'
import {
  EntryGoneError,
  fileSnapshot,
  removeFile,
  replaceFile,
  sameSnapshot,
  type Snapshot,
} from './configfs-tsm-files.js'

/** The evidence for one inblob: SEV-SNP's report and certificate table, or TDX's quote. */
export type ProduceEvidence = (
  inblob: Buffer,
  context: { privlevel?: number },
) => Promise<{ outblob: Buffer; auxblob?: Buffer }>

export interface ConfigfsTsmStandInOptions {
  /** Plays /sys/kernel/config/tsm/report; must exist. */
  dir: string
  provider: TsmProvider
  produce: ProduceEvidence
  /** What privlevel_floor says (SEV-SNP: the VMPL the guest runs at); default 0. */
  privlevelFloor?: number
  log?: Logger
}

/** A stalled writer cannot keep an entry busy forever: after this many rounds the evidence is published. */
const MAX_ROUNDS_PER_SYNC = 8

/** One report entry: its inputs as last seen, and the generation it has published. */
export class Entry {
  private watcher?: FSWatcher
  private generation = 0
  private seen: { inblob?: Snapshot; privlevel?: Snapshot } = {}
  private inblob?: Buffer
  private privlevel?: number
  private syncing?: Promise<void>
  private again = false
  private closed = false

  constructor(
    private readonly dir: string,
    private readonly opts: ConfigfsTsmStandInOptions,
    private readonly log: Logger,
  ) {}

  private at(attribute: string): string {
    return path.join(this.dir, attribute)
  }

  async open(): Promise<void> {
    // watching before populating: a client writes only once generation exists, so nothing is missed
    this.watcher = watch(this.dir, (_event, file) => {
      if (file === null || file === 'inblob' || file === 'privlevel') this.kick()
    })
    this.watcher.on('error', () => this.watcher?.close()) // the entry was removed
    try {
      await this.populate()
    } catch (err) {
      if (err instanceof EntryGoneError) return
      throw err
    }
    this.kick()
  }

  async close(): Promise<void> {
    this.closed = true
    this.watcher?.close()
    await this.syncing
  }

  private async populate(): Promise<void> {
    const { provider, privlevelFloor = 0 } = this.opts
    for (const [name, data] of [
      ['provider', `${provider}\n`],
      ['privlevel_floor', `${privlevelFloor}\n`],
      ['privlevel', ''],
      ['inblob', ''],
      ['outblob', ''],
      ...(provider === 'sev_guest' ? [['auxblob', '']] : []),
      ['generation', '0\n'], // last: its presence says the entry is ready
    ] as const)
      await replaceFile(this.at(name), data)
  }

  /** Coalesces events: one sync at a time, and one more if anything changed meanwhile. */
  private kick(): void {
    if (this.closed) return
    if (this.syncing) {
      this.again = true
      return
    }
    this.syncing = (async () => {
      do {
        this.again = false
        await this.sync()
      } while (this.again && !this.closed)
    })()
      .catch((err: unknown) => {
        if (!(err instanceof EntryGoneError))
          this.log.error('serving the entry failed', { error: messageOf(err) })
      })
      .finally(() => (this.syncing = undefined))
  }

  private async sync(): Promise<void> {
    let writes = 0
    let produced: { outblob: Buffer; auxblob?: Buffer } | Error | undefined
    for (let round = 0; round < MAX_ROUNDS_PER_SYNC; round++) {
      const taken = await this.takeWrites()
      if (taken === 0) break
      writes += taken
      // an input written while produce ran is seen in the next round, and the evidence made again
      if (this.inblob) produced = await this.produce(this.inblob)
    }
    if (writes === 0) return
    if (produced !== undefined) await this.publish(produced)
    this.generation += writes
    await replaceFile(this.at('generation'), `${this.generation}\n`)
    this.log.info('inputs taken', {
      writes,
      generation: this.generation,
      evidence: produced === undefined ? 'unchanged' : produced instanceof Error ? 'failed' : 'new',
    })
  }

  /** Counts the inputs written since last seen; refused ones change nothing, as in the kernel. */
  private async takeWrites(): Promise<number> {
    let writes = 0
    const privlevel = await this.changed('privlevel')
    if (privlevel) {
      const text = privlevel.data.toString('latin1').trim()
      const value = /^\d+$/.test(text) ? Number(text) : NaN
      const floor = this.opts.privlevelFloor ?? 0
      if (value >= floor && value <= TSM_PRIVLEVEL_MAX) {
        this.privlevel = value
        writes++
      } else
        this.refuse(
          'privlevel',
          `${JSON.stringify(text)} is not from ${floor} to ${TSM_PRIVLEVEL_MAX} (EINVAL)`,
        )
    }
    const inblob = await this.changed('inblob')
    if (inblob) {
      if (inblob.data.length <= TSM_INBLOB_MAX_BYTES) {
        this.inblob = inblob.data
        writes++
      } else this.refuse('inblob', `${inblob.data.length} bytes, more than ${TSM_INBLOB_MAX_BYTES} (EFBIG)`)
    }
    return writes
  }

  /** The attribute's new content when it was written since last seen; empty is a write half done. */
  private async changed(attribute: 'inblob' | 'privlevel'): Promise<Snapshot | undefined> {
    const now = await fileSnapshot(this.at(attribute))
    if (now === undefined || now.data.length === 0 || sameSnapshot(now, this.seen[attribute]))
      return undefined
    this.seen[attribute] = now
    return now
  }

  private refuse(attribute: string, why: string): void {
    this.log.warn('refused a write, as the kernel would; generation stays', { attribute, why })
  }

  private async produce(inblob: Buffer): Promise<{ outblob: Buffer; auxblob?: Buffer } | Error> {
    try {
      const got = await this.opts.produce(inblob, { privlevel: this.privlevel })
      const sizes = [got.outblob.length, got.auxblob?.length ?? 0]
      if (sizes.some((n) => n > TSM_OUTBLOB_MAX_BYTES))
        return new Error(`produce returned ${sizes.join(' + ')} bytes, over ${TSM_OUTBLOB_MAX_BYTES}`)
      return got
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err))
    }
  }

  private async publish(produced: { outblob: Buffer; auxblob?: Buffer } | Error): Promise<void> {
    const auxblob = this.opts.provider === 'sev_guest'
    if (produced instanceof Error) {
      this.log.error('producing evidence failed: outblob removed, as a kernel read would fail', {
        error: produced.message,
      })
      await removeFile(this.at('outblob'))
      if (auxblob) await removeFile(this.at('auxblob'))
      return
    }
    await replaceFile(this.at('outblob'), produced.outblob)
    if (auxblob) await replaceFile(this.at('auxblob'), produced.auxblob ?? Buffer.alloc(0))
  }
}
