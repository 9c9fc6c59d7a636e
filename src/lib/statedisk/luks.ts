/** The LUKS2 state disk, driven through cryptsetup; keys reach it only through 0600 files or stdin, never argv. */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import { writeSecretFile, type Runner } from '../system/index.js'
import { encodeMarkToken, findMark, type FoundMark, type StateDiskMark } from './mark.js'

export const CRYPTSETUP = 'cryptsetup'
export const BLKID = 'blkid'

/** Key-derivation cost for new keyslots; tests lower it, production keeps cryptsetup's default (argon2id). */
export interface PbkdfSettings {
  type: 'pbkdf2' | 'argon2id'
  iterations: number
}

/** What a device holds before boot decides what to do with it. */
export type DiskContent =
  | { kind: 'blank' }
  | { kind: 'luks2'; mark?: StateDiskMark }
  /** A signature blkid recognized (a file system, a partition table, LUKS1…): not ours to format. */
  | { kind: 'foreign'; type: string }

export class CryptsetupDisk {
  constructor(
    readonly device: string,
    private readonly runner: Runner,
    /** A directory only root can read; key files live there for the duration of one command. */
    private readonly scratchDir: string,
    private readonly pbkdf?: PbkdfSettings,
  ) {}

  private uuidRead?: Promise<string>

  /**
   * The LUKS UUID as cryptsetup reports it. Re-keying keeps it, so the first read serves every
   * caller, including one that asks while the read started at listen time is still running.
   */
  uuid(): Promise<string> {
    this.uuidRead ??= this.readUuid().catch((err: unknown) => {
      this.uuidRead = undefined // a later caller tries again
      throw err
    })
    return this.uuidRead
  }

  private async readUuid(): Promise<string> {
    const { stdout } = await this.runner.run(CRYPTSETUP, ['luksUUID', this.device])
    const uuid = stdout.trim()
    if (!/^[0-9a-fA-F-]{36}$/.test(uuid))
      throw new Error(`cryptsetup reported UUID ${JSON.stringify(uuid)} for ${this.device}`)
    return uuid
  }

  /** blkid's low-level probe: exit 2 means it found no signature at all. */
  async probe(): Promise<DiskContent> {
    let stdout: string
    try {
      ;({ stdout } = await this.runner.run(BLKID, ['--probe', '--output', 'export', this.device]))
    } catch (err) {
      if ((err as { exitCode?: unknown }).exitCode === 2) return { kind: 'blank' }
      throw err
    }
    const fields = new Map(
      stdout
        .split('\n')
        .map((line) => line.split('=', 2) as [string, string?])
        .filter((kv): kv is [string, string] => kv[1] !== undefined),
    )
    const type = fields.get('TYPE') ?? fields.get('PTTYPE') ?? 'unknown signature'
    if (type !== 'crypto_LUKS' || fields.get('VERSION') !== '2') {
      const version = type === 'crypto_LUKS' ? ` version ${fields.get('VERSION') ?? '?'}` : ''
      return { kind: 'foreign', type: `${type}${version}` }
    }
    return { kind: 'luks2', mark: (await this.readMark())?.mark }
  }

  /** A new LUKS2 header with `key` in keyslot 0; the UUID changes, so the cached one is dropped. */
  async format(key: Buffer): Promise<void> {
    this.uuidRead = undefined
    await this.runner.run(
      CRYPTSETUP,
      ['luksFormat', '--type', 'luks2', '--batch-mode', ...this.pbkdfArgs(), '--key-file', '-', this.device],
      { input: key },
    )
  }

  async readMark(): Promise<FoundMark | undefined> {
    const { stdout } = await this.runner.run(CRYPTSETUP, ['luksDump', '--dump-json-metadata', this.device])
    try {
      return findMark(stdout)
    } catch (err) {
      throw new Error(`the state disk ${this.device} has an unreadable mark`, { cause: err })
    }
  }

  /** Writes the mark, replacing ours in place when there is one. */
  async writeMark(mark: StateDiskMark): Promise<void> {
    const found = await this.readMark()
    const slot = found ? ['--token-id', String(found.tokenId), '--token-replace'] : []
    await this.runner.run(CRYPTSETUP, ['token', 'import', ...slot, '--json-file', '-', this.device], {
      input: Buffer.from(encodeMarkToken(mark)),
    })
  }

  /** Replaces the passphrase in `oldKeyFile` by `newKey` (raw bytes used as the key file's content). */
  async changeKey(oldKeyFile: string, newKey: Buffer): Promise<void> {
    await this.withKeyFile(newKey, (newKeyFile) =>
      this.runner.run(CRYPTSETUP, [
        'luksChangeKey',
        '--batch-mode',
        ...this.pbkdfArgs(),
        '--key-file',
        oldKeyFile,
        this.device,
        newKeyFile,
      ]),
    )
  }

  /** True when the key opens a keyslot; cryptsetup reads it from stdin ("--key-file -"). */
  async opensWith(key: Buffer): Promise<boolean> {
    try {
      await this.runner.run(CRYPTSETUP, ['open', '--test-passphrase', '--key-file', '-', this.device], {
        input: key,
      })
      return true
    } catch {
      return false
    }
  }

  private pbkdfArgs(): string[] {
    if (!this.pbkdf) return []
    return ['--pbkdf', this.pbkdf.type, '--pbkdf-force-iterations', String(this.pbkdf.iterations)]
  }

  private async withKeyFile<T>(key: Buffer, fn: (file: string) => Promise<T>): Promise<T> {
    await mkdir(this.scratchDir, { recursive: true, mode: 0o700 })
    const dir = await mkdtemp(path.join(this.scratchDir, 'key-'))
    const file = path.join(dir, 'key')
    try {
      await writeSecretFile(file, key, 'exclusive')
      return await fn(file)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }
}
