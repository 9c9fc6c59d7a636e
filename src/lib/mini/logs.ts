/**
 * `mini logs`: a node's service logs as plain lines, all of them named by service or one as it is,
 * and with `follow` what is appended from then on (as `tail -f`; truncated files start over).
 */
import { open, stat } from 'node:fs/promises'
import { CliError } from '../errors/index.js'
import { sleepMs } from '../system/index.js'
import { nodeLogFiles, requireMiniNode, type NodeLogFile } from './layout.js'

/** How often a followed log is looked at for new lines. */
export const LOG_FOLLOW_INTERVAL_MS = 250

export interface MiniLogsOptions {
  workspace: string
  node: string
  /** One service (plain lines), or every service (each line prefixed with its service). */
  service?: string
  follow: boolean
  /** Ends a follow (the CLI's Ctrl-C ends the process instead). */
  signal?: AbortSignal
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export async function showNodeLogs(opts: MiniLogsOptions, write: (text: string) => void): Promise<void> {
  const pick = async () => pickFiles(opts)
  let files = await pick()
  const readers = new Map<string, LogReader>()
  const width = () => Math.max(0, ...files.map((f) => f.service.length))
  const show = async () => {
    for (const f of files) {
      const reader = readers.get(f.file) ?? new LogReader(f.file)
      readers.set(f.file, reader)
      for (const line of await reader.newLines())
        write(opts.service ? `${line}\n` : `${f.service.padEnd(width())} | ${line}\n`)
    }
  }
  await show()
  while (opts.follow && !opts.signal?.aborted) {
    await (opts.sleep ?? sleepMs)(LOG_FOLLOW_INTERVAL_MS, opts.signal).catch(() => {})
    if (!opts.service) files = await pick() // a unit that starts later brings its log
    await show()
  }
}

async function pickFiles(opts: MiniLogsOptions): Promise<NodeLogFile[]> {
  await requireMiniNode(opts.workspace, opts.node)
  const files = await nodeLogFiles(opts.workspace, opts.node)
  if (opts.service === undefined) return files
  const one = files.filter((f) => f.service === opts.service)
  if (one.length === 0)
    throw new CliError(`${opts.node} has no log of a service ${JSON.stringify(opts.service)}`, {
      hint: files.length
        ? `its services: ${files.map((f) => f.service).join(', ')}`
        : 'it has written no log yet',
    })
  return one
}

/** Reads a file's complete lines from where it left off; a line still being written waits. */
class LogReader {
  private offset = 0
  private partial = ''

  constructor(private readonly file: string) {}

  async newLines(): Promise<string[]> {
    const size = await stat(this.file).then(
      (s) => s.size,
      () => 0,
    )
    if (size < this.offset) {
      // truncated (a node that boots again starts its logs over): read from the start
      this.offset = 0
      this.partial = ''
    }
    if (size === this.offset) return []
    const handle = await open(this.file, 'r')
    try {
      const buffer = Buffer.alloc(size - this.offset)
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.offset)
      this.offset += bytesRead
      const text = this.partial + buffer.subarray(0, bytesRead).toString('utf8')
      const lines = text.split('\n')
      this.partial = lines.pop() ?? ''
      return lines
    } finally {
      await handle.close()
    }
  }
}
