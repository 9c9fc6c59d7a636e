/**
 * QEMU's guest agent (qemu-ga in the image, a virtio serial port to a unix socket on the host): how
 * `mini exec` runs a command on a VM, as `kind exec`/`minikube ssh` do, without a network login.
 * The protocol is JSON lines; `guest-sync-delimited` with a random id first, because the port keeps
 * what an earlier client left unread: every line before the answer carrying that id is dropped.
 */
import { connect, type Socket } from 'node:net'
import { randomInt } from 'node:crypto'

export interface GuestExecResult {
  exitCode: number
  stdout: string
  stderr: string
}

/** How often guest-exec-status is asked while the command runs. */
const EXEC_POLL_MS = 200
/**
 * The agent's port takes one client at a time (another waits until it leaves), and a guest on one
 * emulated vCPU of a busy host answers slowly: 30 s before a sync counts as unanswered.
 */
const SYNC_TIMEOUT_MS = 30_000

/** Runs `argv` on the guest (no shell) and returns its exit code and output, once it ended. */
export async function guestExec(
  socketPath: string,
  argv: readonly string[],
  opts: { timeoutMs?: number; input?: string | Buffer } = {},
): Promise<GuestExecResult> {
  const [file, ...args] = argv
  if (!file) throw new Error('guest exec: empty command')
  const agent = await GuestAgent.connect(socketPath)
  try {
    const started = (await agent.call('guest-exec', {
      path: file,
      arg: args,
      'capture-output': true,
      ...(opts.input !== undefined && { 'input-data': Buffer.from(opts.input).toString('base64') }),
    })) as { pid: number }
    const deadline = Date.now() + (opts.timeoutMs ?? 120_000)
    for (;;) {
      const status = (await agent.call('guest-exec-status', { pid: started.pid })) as {
        exited: boolean
        exitcode?: number
        signal?: number
        'out-data'?: string
        'err-data'?: string
      }
      if (status.exited)
        return {
          exitCode: status.exitcode ?? 128 + (status.signal ?? 0),
          stdout: Buffer.from(status['out-data'] ?? '', 'base64').toString(),
          stderr: Buffer.from(status['err-data'] ?? '', 'base64').toString(),
        }
      if (Date.now() > deadline)
        throw new Error(`guest exec ${file}: still running after ${opts.timeoutMs ?? 120_000} ms`)
      await new Promise((r) => setTimeout(r, EXEC_POLL_MS))
    }
  } finally {
    agent.close()
  }
}

/** Resolves once the agent answers (the guest booted far enough), or rejects at the deadline. */
export async function waitForGuestAgent(socketPath: string, timeoutMs: number, signal?: AbortSignal) {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    signal?.throwIfAborted()
    try {
      const agent = await GuestAgent.connect(socketPath)
      agent.close()
      return
    } catch (err) {
      last = err
      await new Promise((r) => setTimeout(r, 1_000))
    }
  }
  throw new Error(`the guest agent at ${socketPath} did not answer in ${timeoutMs} ms`, { cause: last })
}

class GuestAgent {
  private buffer = ''
  private waiting?: { resolve: (v: unknown) => void; reject: (e: Error) => void; syncId?: number }

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      this.buffer += chunk
      this.deliver()
    })
    socket.on('error', (err) => this.fail(err))
    socket.on('close', () => this.fail(new Error('the guest agent closed the connection')))
  }

  static async connect(socketPath: string): Promise<GuestAgent> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(socketPath)
      s.once('connect', () => resolve(s))
      s.once('error', reject)
    })
    const agent = new GuestAgent(socket)
    try {
      const id = randomInt(1, 2 ** 31)
      const synced = agent.call('guest-sync-delimited', { id }, id)
      const timer = setTimeout(
        () => agent.fail(new Error('the guest agent did not answer (not booted yet?)')),
        SYNC_TIMEOUT_MS,
      )
      const got = await synced.finally(() => clearTimeout(timer))
      if (got !== id) throw new Error(`the guest agent answered sync ${String(got)}, not ${id}`)
      return agent
    } catch (err) {
      agent.close()
      throw err
    }
  }

  call(command: string, args: Record<string, unknown>, syncId?: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject, syncId }
      this.socket.write(JSON.stringify({ execute: command, arguments: args }) + '\n')
    })
  }

  private deliver() {
    const ff = this.buffer.lastIndexOf('\xff')
    if (ff >= 0) this.buffer = this.buffer.slice(ff + 1)
    let nl: number
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim()
      this.buffer = this.buffer.slice(nl + 1)
      if (!line) continue
      const waiting = this.waiting
      if (!waiting) continue
      let reply: { return?: unknown; error?: { class?: string; desc?: string } }
      try {
        reply = JSON.parse(Buffer.from(line, 'latin1').toString('utf8')) as typeof reply
      } catch {
        if (waiting.syncId !== undefined) continue
        this.waiting = undefined
        waiting.reject(new Error(`the guest agent sent no JSON: ${line.slice(0, 200)}`))
        continue
      }
      // an answer to an earlier client's request
      if (waiting.syncId !== undefined && reply.return !== waiting.syncId) continue
      this.waiting = undefined
      if (reply.error)
        waiting.reject(new Error(`guest agent: ${reply.error.desc ?? reply.error.class ?? 'error'}`))
      else waiting.resolve(reply.return)
    }
  }

  fail(err: Error) {
    const waiting = this.waiting
    this.waiting = undefined
    waiting?.reject(err)
  }

  close() {
    this.socket.destroy()
  }
}
