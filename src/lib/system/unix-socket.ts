/**
 * Local services on unix sockets, `unix:/absolute/path` (grpc's spelling): a socket that only its
 * owner can connect to, where a loopback port would let every user of a shared host in.
 */
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises'
import { connect } from 'node:net'
import path from 'node:path'
import { CliError, isErrnoException } from '../errors/index.js'

export const UNIX_ADDRESS_PREFIX = 'unix:'
/** sun_path holds 108 bytes on Linux, the terminating NUL included. */
export const MAX_SOCKET_PATH_BYTES = 107
export const OWNER_ONLY_SOCKET_MODE = 0o600

/** The socket path of a `unix:` address; undefined for any other address (HOST:PORT). */
export function unixSocketPath(address: string): string | undefined {
  return address.startsWith(UNIX_ADDRESS_PREFIX) ? address.slice(UNIX_ADDRESS_PREFIX.length) : undefined
}

/** What is wrong with a `unix:` address, or undefined when it is fine (or not a unix address). */
export function unixAddressProblem(address: string): string | undefined {
  const socket = unixSocketPath(address)
  if (socket === undefined) return undefined
  if (!path.isAbsolute(socket) || path.normalize(socket) !== socket || socket.endsWith('/'))
    return `${JSON.stringify(address)} is not unix:/absolute/path`
  const bytes = Buffer.byteLength(socket)
  if (bytes > MAX_SOCKET_PATH_BYTES)
    return `a unix socket path holds at most ${MAX_SOCKET_PATH_BYTES} bytes, this one has ${bytes}`
  return undefined
}

/**
 * Makes `socket` ready to bind for its owner alone: its folder exists 0700 (created so, or already
 * closed to others, so nobody else can connect in the moment between bind and chmod), and a
 * socket a killed listener left there is removed. Anything else at the path is refused.
 * `configKey` names the setting in errors.
 */
export async function prepareOwnerOnlySocket(socket: string, configKey: string): Promise<void> {
  const problem = unixAddressProblem(`${UNIX_ADDRESS_PREFIX}${socket}`)
  const hint = `change ${configKey} in the node config`
  if (problem) throw new CliError(problem, { hint })
  const dir = path.dirname(socket)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const folder = await lstat(dir)
  const mode = folder.mode & 0o777
  const open = !folder.isDirectory()
    ? 'is not a directory'
    : folder.uid !== process.getuid?.()
      ? 'belongs to another user'
      : (mode & 0o077) !== 0
        ? `is mode 0${mode.toString(8)}`
        : undefined
  if (open)
    throw new CliError(`${dir} ${open}: other users could reach ${socket}`, {
      hint: `give the socket a folder of its own, of this user and mode 0700, or ${hint}`,
    })
  const existing = await lstat(socket).catch((err: unknown) => {
    if (isErrnoException(err, 'ENOENT')) return undefined
    throw err
  })
  if (!existing) return
  if (!existing.isSocket())
    throw new CliError(`${socket} exists and is not a socket; refusing to replace it`, { hint })
  if (await accepts(socket))
    throw new CliError(`another process listens on ${socket}`, { hint: `stop it, or ${hint}` })
  await unlink(socket)
}

/** After bind: the socket's own mode, for a folder that may not stay closed. */
export function restrictSocketToOwner(socket: string): Promise<void> {
  return chmod(socket, OWNER_ONLY_SOCKET_MODE)
}

function accepts(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ path: socket }, () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}
