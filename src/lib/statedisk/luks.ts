/** The LUKS2 state disk, driven through cryptsetup; keys reach it only through 0600 files or stdin, never argv. */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import { writeSecretFile, type Runner } from '../system/index.js'
import { encodeMarkToken, findMark, type FoundMark, type StateDiskMark } from './mark.js'

export const CRYPTSETUP = 'cryptsetup'
export const BLKID = 'blkid'

/** Key-derivation cost for new keyslots; tests and mini lower it, production uses LUKS_KEYSLOT_PBKDF_ARGS. */
export interface PbkdfSettings {
  type: 'pbkdf2' | 'argon2id'
  iterations: number
}

/**
 * The data segment as Constellation's disk-mapper formats it (internal/cryptsetup, format()):
 * AES-XTS with a 512-bit key, 4096-byte sectors, and dm-integrity with HMAC-SHA256 tags, whose
 * 256-bit key cryptsetup adds to the volume key (96 bytes in all, as Constellation's 64 + 32).
 * No --integrity-no-wipe: cryptsetup then writes every sector once so that its tag is valid, as
 * Constellation wipes after formatting; with it, reading a sector never written fails its check.
 */
export const LUKS_DATA_ARGS = [
  '--cipher',
  'aes-xts-plain64',
  '--key-size',
  '512',
  '--hash',
  'sha256',
  '--sector-size',
  '4096',
] as const
export const LUKS_INTEGRITY_ARGS = ['--integrity', 'hmac-sha256'] as const
/**
 * Constellation's keyslot cost: argon2id benchmarked to 2 s, at most 64 MiB and 4 threads (RFC 9106's
 * low-memory recommendation). cryptsetup caps the threads at the CPUs it finds.
 */
export const LUKS_KEYSLOT_PBKDF_ARGS = [
  '--pbkdf',
  'argon2id',
  '--iter-time',
  '2000',
  '--pbkdf-memory',
  '65536',
  '--pbkdf-parallel',
  '4',
] as const

/**
 * How a new state disk is formatted. Production: integrity on, Constellation's argon2id. `integrity:
 * false` is for hosts without device-mapper (mini, tests): cryptsetup cannot create dm-integrity
 * there, and such a disk is encrypted but not authenticated, which whoever reports it must say.
 */
export interface StateDiskFormat {
  integrity: boolean
  /** Overrides LUKS_KEYSLOT_PBKDF_ARGS (tests and mini: pbkdf2 with few iterations). */
  pbkdf?: PbkdfSettings
}

export const PRODUCTION_STATE_DISK_FORMAT: StateDiskFormat = { integrity: true }

/** The luksFormat argv (without the key file and device) for `format`. */
export function luksFormatArgs(format: StateDiskFormat): string[] {
  return [
    'luksFormat',
    '--type',
    'luks2',
    '--batch-mode',
    ...LUKS_DATA_ARGS,
    ...(format.integrity ? LUKS_INTEGRITY_ARGS : []),
    ...(format.pbkdf ? pbkdfArgs(format.pbkdf) : LUKS_KEYSLOT_PBKDF_ARGS),
  ]
}

function pbkdfArgs(pbkdf: PbkdfSettings): string[] {
  return ['--pbkdf', pbkdf.type, '--pbkdf-force-iterations', String(pbkdf.iterations)]
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
    /**
     * Whether format() adds dm-integrity. Production wiring passes true; the default is false only
     * because a host without device-mapper (mini, tests) cannot format it at all.
     */
    private readonly integrity = false,
  ) {}

  /** What format() makes: said wherever the disk is reported, since integrity may be off. */
  get formatting(): StateDiskFormat {
    return { integrity: this.integrity, ...(this.pbkdf && { pbkdf: this.pbkdf }) }
  }

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
    await this.runner.run(CRYPTSETUP, [...luksFormatArgs(this.formatting), '--key-file', '-', this.device], {
      input: key,
    })
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

  /** A new keyslot costs what the format's would. */
  private pbkdfArgs(): string[] {
    return this.pbkdf ? pbkdfArgs(this.pbkdf) : [...LUKS_KEYSLOT_PBKDF_ARGS]
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
