/**
 * What became of the Init that took the node lock, for the callers that come back for it. An answer
 * the original caller was no longer there to receive (Ctrl-C, a crashed laptop) is kept, in memory
 * and on the state disk (0600, created exclusively), until a resume hands it over; then the file is
 * removed, so the admin credential does not stay on the node for nothing.
 */
import { rm } from 'node:fs/promises'
import { CliError } from '../../errors/index.js'
import type { NodePaths } from '../../paths.js'
import { lstatIfPresent, readRegularFile, writeSecretFile } from '../../system/index.js'

/** What init_success carries, and the key a resume proof must be made with. */
export interface InitAnswer {
  kubeconfig: Buffer
  clusterId: Buffer
  ownerId: Buffer
  /** deriveResumeKey(master secret): checks resume proofs; never sent. */
  resumeKey: Buffer
}

export type InitSettled = { ok: true; answer: InitAnswer } | { ok: false; error: unknown }

/**
 * none → running (an Init took the lock) → handed-over | pending | failed; pending → handed-over.
 * There is no way back: a node is initialized once.
 */
export type InitResultState = 'none' | 'running' | 'pending' | 'handed-over' | 'failed'

/** A kubeconfig is a few KiB; anything near this is not ours. */
const MAX_RESULT_FILE_BYTES = 1024 * 1024

export class InitResultKeeper {
  private state_: InitResultState = 'none'
  private resumeKey_?: Buffer
  private settle!: (s: InitSettled) => void
  private readonly settled_ = new Promise<InitSettled>((resolve) => (this.settle = resolve))
  /** The answer is on the state disk (removed once handed over). */
  private onDisk = false
  private keeping?: Promise<void>

  constructor(private readonly paths: NodePaths) {}

  /** An answer kept on the state disk by an earlier run of the bootstrapper (a reboot); undefined when none is. */
  static async restore(paths: NodePaths): Promise<InitResultKeeper | undefined> {
    const answer = await readKeptAnswer(paths.initResultFile)
    if (!answer) return undefined
    const keeper = new InitResultKeeper(paths)
    keeper.begin(answer.resumeKey)
    keeper.succeed(answer)
    keeper.onDisk = true
    return keeper
  }

  get state(): InitResultState {
    return this.state_
  }

  /** The key resume proofs are checked with; known once an Init took the lock. */
  get resumeKey(): Buffer | undefined {
    return this.resumeKey_
  }

  /** The Init's answer or failure, once it has one. */
  settled(): Promise<InitSettled> {
    return this.settled_
  }

  begin(resumeKey: Buffer): void {
    this.state_ = 'running'
    this.resumeKey_ = resumeKey
  }

  succeed(answer: InitAnswer): void {
    this.state_ = 'pending'
    this.settle({ ok: true, answer })
  }

  fail(error: unknown): void {
    this.state_ = 'failed'
    this.settle({ ok: false, error })
  }

  /**
   * Nobody received the answer: it goes to the state disk, so that a reboot does not lose it
   * either. Written once, however many callers went away (the original and waiting resumes).
   */
  keep(answer: InitAnswer): Promise<void> {
    if (this.state_ !== 'pending') return Promise.resolve()
    this.keeping ??= this.onDisk
      ? Promise.resolve()
      : writeSecretFile(this.paths.initResultFile, encodeAnswer(answer), 'exclusive').then(() => {
          this.onDisk = true
        })
    return this.keeping
  }

  /** A caller who proved the init secret (and, resuming, the master secret) received it on an open call. */
  async handOver(): Promise<void> {
    if (this.state_ !== 'pending') return
    this.state_ = 'handed-over'
    await this.keeping?.catch(() => {}) // a write under way would otherwise land after the removal
    if (this.onDisk) await rm(this.paths.initResultFile, { force: true })
    this.onDisk = false
  }
}

function encodeAnswer(a: InitAnswer): string {
  return JSON.stringify({
    kubeconfig: a.kubeconfig.toString('base64'),
    clusterId: a.clusterId.toString('hex'),
    ownerId: a.ownerId.toString('hex'),
    resumeKey: a.resumeKey.toString('base64'),
  })
}

async function readKeptAnswer(file: string): Promise<InitAnswer | undefined> {
  if (!(await lstatIfPresent(file))) return undefined
  const text = (
    await readRegularFile(file, { maxBytes: MAX_RESULT_FILE_BYTES, what: 'kept Init answer' })
  ).toString()
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (cause) {
    throw new CliError(`${file}: not JSON`, { cause, hint: CHANGED_BY_OTHERS })
  }
  const field = (name: string, encoding: 'base64' | 'hex', length?: number): Buffer => {
    const value = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[name] : undefined
    const bytes = typeof value === 'string' ? Buffer.from(value, encoding) : undefined
    if (!bytes || bytes.toString(encoding) !== value || (length !== undefined && bytes.length !== length))
      throw new CliError(`${file}: ${name} is not ${length ?? 'some'} ${encoding} bytes`, {
        hint: CHANGED_BY_OTHERS,
      })
    return bytes
  }
  return {
    kubeconfig: field('kubeconfig', 'base64'),
    clusterId: field('clusterId', 'hex', 32),
    ownerId: field('ownerId', 'hex'),
    resumeKey: field('resumeKey', 'base64', 32),
  }
}

const CHANGED_BY_OTHERS = 'only the bootstrapper writes this file; something else changed it'
