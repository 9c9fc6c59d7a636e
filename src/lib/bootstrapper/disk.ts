/** The LUKS2 state disk, driven through cryptsetup; keys reach it only through 0600 files, never argv. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Runner } from '../system/index.js'

export const CRYPTSETUP = 'cryptsetup'

/** Key-derivation cost for new keyslots; tests lower it, production keeps cryptsetup's default (argon2id). */
export interface PbkdfSettings {
  type: 'pbkdf2' | 'argon2id'
  iterations: number
}

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
      await writeFile(file, key, { mode: 0o600, flag: 'wx' })
      return await fn(file)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }
}
