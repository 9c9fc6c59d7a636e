/** The node's log as the operator gets it on a failed init: our JSON lines plus kubeadm's output. */

/** Where the failure stream's log comes from (journald on a node; the in-memory collector here). */
export interface LogSource {
  collect(): Promise<Buffer>
}

export const LOG_CHUNK_BYTES = 1024
const DEFAULT_LIMIT_BYTES = 4 * 1024 * 1024

/** Keeps the newest `limitBytes` of log text in memory; also forwards every line (to stderr → journald). */
export class LogCollector implements LogSource {
  private lines: string[] = []
  private size = 0

  constructor(
    private readonly forward: (line: string) => void = () => {},
    private readonly limitBytes = DEFAULT_LIMIT_BYTES,
  ) {}

  /** Pass as the logger's `write`. */
  readonly write = (line: string): void => {
    this.forward(line)
    this.add(line)
  }

  /** Output of a child process, e.g. kubeadm, kept verbatim. */
  append(text: string): void {
    for (const line of text.split('\n')) if (line) this.add(line)
  }

  collect(): Promise<Buffer> {
    return Promise.resolve(Buffer.from(this.lines.map((l) => l + '\n').join('')))
  }

  private add(line: string): void {
    this.lines.push(line)
    this.size += line.length + 1
    while (this.size > this.limitBytes && this.lines.length > 1)
      this.size -= (this.lines.shift() ?? '').length + 1
  }
}

export function chunk(data: Buffer, size = LOG_CHUNK_BYTES): Buffer[] {
  const chunks: Buffer[] = []
  for (let i = 0; i < data.length; i += size) chunks.push(data.subarray(i, i + size))
  return chunks
}
