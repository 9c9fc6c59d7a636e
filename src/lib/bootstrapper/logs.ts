/**
 * The node's log: our JSON lines plus kubeadm's output. A failed Init's caller who proved the init
 * secret gets the newest part of that attempt's own log, with kubeadm's join credentials redacted;
 * nobody gets the daemon's history.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { BOOTSTRAP_TOKEN_IN_TEXT } from '../contract/index.js'

export const LOG_CHUNK_BYTES = 1024
/** What a failed Init sends at most: the newest part of that attempt's own log. */
export const ATTEMPT_LOG_LIMIT_BYTES = 64 * 1024
const DEFAULT_HISTORY_BYTES = 4 * 1024 * 1024

/** Newest lines first to go last: keeps at most `limitBytes` of text. */
class LineRing {
  private lines: string[] = []
  private size = 0

  constructor(private readonly limitBytes: number) {}

  add(line: string): void {
    this.lines.push(line)
    this.size += Buffer.byteLength(line) + 1
    while (this.size > this.limitBytes && this.lines.length > 0)
      this.size -= Buffer.byteLength(this.lines.shift() ?? '') + 1
  }

  text(): string {
    return this.lines.map((l) => l + '\n').join('')
  }
}

/** Keeps the daemon's recent log in memory and each Init attempt's own lines; forwards every line (to stderr → journald). */
export class LogCollector {
  private readonly history: LineRing
  private readonly attempt = new AsyncLocalStorage<LineRing>()

  constructor(
    private readonly forward: (line: string) => void = () => {},
    historyBytes = DEFAULT_HISTORY_BYTES,
  ) {
    this.history = new LineRing(historyBytes)
  }

  /** Pass as the logger's `write`. */
  readonly write = (line: string): void => {
    this.forward(line)
    this.add(line)
  }

  /** Output of a child process, e.g. kubeadm, kept verbatim. */
  append(text: string): void {
    for (const line of text.split('\n')) if (line) this.add(line)
  }

  /** The daemon's recent log (for tests and diagnostics on the node; never sent to a caller). */
  collect(): Promise<Buffer> {
    return Promise.resolve(Buffer.from(this.history.text()))
  }

  /** Runs one Init attempt; every line logged in its async context also goes to that attempt's log. */
  runAttempt<T>(fn: () => Promise<T>): Promise<T> {
    return this.attempt.run(new LineRing(ATTEMPT_LOG_LIMIT_BYTES), fn)
  }

  /** The current attempt's log, newest ATTEMPT_LOG_LIMIT_BYTES, join credentials redacted. */
  attemptLog(): Buffer {
    const log = Buffer.from(redactCredentials(this.attempt.getStore()?.text() ?? ''))
    return log.length > ATTEMPT_LOG_LIMIT_BYTES ? log.subarray(log.length - ATTEMPT_LOG_LIMIT_BYTES) : log
  }

  private add(line: string): void {
    this.history.add(line)
    this.attempt.getStore()?.add(line)
  }
}

/** What joins a node to the cluster, as kubeadm prints it: flag values, the token, the certificate key. */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /(--(?:token|discovery-token-ca-cert-hash|certificate-key)(?:=|\s+))\S+/g,
  /(Using certificate key:\s*)\S+/g,
  new RegExp(`()${BOOTSTRAP_TOKEN_IN_TEXT}`, 'g'),
  // the certificate key alone on its line, in case the line naming it was already dropped
  /()^\s*[0-9a-f]{64}\s*$/gm,
]
const REDACTED = '[redacted]'

export function redactCredentials(text: string): string {
  return CREDENTIAL_PATTERNS.reduce((t, pattern) => t.replace(pattern, `$1${REDACTED}`), text)
}

export function chunk(data: Buffer, size = LOG_CHUNK_BYTES): Buffer[] {
  const chunks: Buffer[] = []
  for (let i = 0; i < data.length; i += size) chunks.push(data.subarray(i, i + size))
  return chunks
}
