/**
 * How `systemctl start` and `systemctl restart` reach a mini node's supervisor: the simulator's
 * systemctl (simulator/systemctl-fake) connects to the node's 0600 unix socket, writes one JSON line
 * `{"verb":"start","units":[…]}` and gets one back, `{"ok":true}` or `{"ok":false,"code":N,"message":…}`,
 * which it prints and exits with, as systemctl does (5: no such unit).
 */
import { createServer, type Server, type Socket } from 'node:net'
import { messageOf } from '../errors/index.js'
import { prepareOwnerOnlySocket, restrictSocketToOwner } from '../system/index.js'

/** A refusal systemctl reports with its exit code. */
export class SystemctlError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
    this.name = 'SystemctlError'
  }
}

const MAX_REQUEST_BYTES = 64 * 1024

export interface SystemctlHandler {
  start(units: string[]): Promise<void>
  /** Stops each unit that runs (as `systemctl stop` would), then starts it. */
  restart(units: string[]): Promise<void>
}

/** The verbs mini's systemd answers. */
const VERBS = ['start', 'restart'] as const

/** Listens on `socket` (refused if another process listens there); close it with `server.close()`. */
export async function serveSystemctl(socket: string, handler: SystemctlHandler): Promise<Server> {
  await prepareOwnerOnlySocket(socket, 'the node folder')
  const server = createServer((conn) => answer(conn, handler))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(socket, () => {
      server.off('error', reject)
      resolve()
    })
  })
  await restrictSocketToOwner(socket)
  return server
}

function answer(conn: Socket, handler: SystemctlHandler): void {
  let request = ''
  conn.setEncoding('utf8')
  conn.on('error', () => conn.destroy())
  conn.on('data', (chunk: string) => {
    request += chunk
    if (request.length > MAX_REQUEST_BYTES) return conn.destroy()
    const end = request.indexOf('\n')
    if (end < 0) return
    conn.removeAllListeners('data')
    void handle(request.slice(0, end), handler).then((reply) => conn.end(JSON.stringify(reply) + '\n'))
  })
}

async function handle(line: string, handler: SystemctlHandler) {
  try {
    const req = JSON.parse(line) as { verb?: unknown; units?: unknown }
    const verb = VERBS.find((v) => v === req.verb)
    if (!verb)
      throw new SystemctlError(
        1,
        `mini's systemd: only ${VERBS.map((v) => `"${v}"`).join(' and ')} are implemented, not ${JSON.stringify(req.verb)}`,
      )
    if (!Array.isArray(req.units) || req.units.length === 0 || !req.units.every((u) => typeof u === 'string'))
      throw new SystemctlError(1, 'Too few arguments.')
    await handler[verb](req.units)
    return { ok: true }
  } catch (err) {
    return { ok: false, code: err instanceof SystemctlError ? err.code : 1, message: messageOf(err) }
  }
}
