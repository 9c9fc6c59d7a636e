/** Ways to reach a TPM: the kernel resource manager device, or swtpm's command channel (TCP or unix socket). */
import { open as openFile } from 'node:fs/promises'
import { connect, type NetConnectOpts, type Socket } from 'node:net'
import { TpmError, TpmUnavailableError } from './errors.js'

export interface TpmTransport {
  /** Sends one command buffer and resolves with the complete response buffer. */
  send(command: Uint8Array): Promise<Buffer>
  close(): Promise<void>
}
/** Which TPM a node uses: its device, or swtpm's command channel as HOST:PORT or unix:/path. */
export type TpmConfig = { device: string; swtpm?: undefined } | { swtpm: string; device?: undefined }

/** Opened per operation, closed by the caller (swtpm serves one connection at a time). */
export type OpenTpm = () => Promise<TpmTransport>

const RESPONSE_HEADER_BYTES = 10
/** TPM2_MAX_COMMAND_SIZE of common TPMs; a response never exceeds it. */
const MAX_RESPONSE_BYTES = 4096

/** /dev/tpmrm0: one write is one command, one read returns the whole response. */
export function openTpmDevice(path: string): OpenTpm {
  return async () => {
    const fh = await openFile(path, 'r+').catch((cause: unknown) => {
      throw new TpmUnavailableError(`opening TPM device ${path}`, cause)
    })
    return {
      async send(command) {
        await fh.write(command)
        const buf = Buffer.alloc(MAX_RESPONSE_BYTES)
        const { bytesRead } = await fh.read(buf, 0, buf.length, null)
        return buf.subarray(0, bytesRead)
      },
      close: () => fh.close(),
    }
  }
}

/**
 * swtpm's server port takes raw TPM 2.0 command buffers with no extra framing. It serves one
 * connection at a time and holds the rest in its accept backlog, where concurrent sessions stalled
 * for seconds (20 quotes at once: 1 s; 100: 27 s). So sessions through one OpenTpm take turns here,
 * as /dev/tpmrm0's resource manager makes them take turns in the kernel.
 */
export function openSwtpm(host: string, port: number): OpenTpm {
  return openSwtpmAt({ host, port }, `${host}:${port}`)
}

/** swtpm's command channel on a unix socket (`--server type=unixio`), which only its owner can reach. */
export function openSwtpmSocket(socketPath: string): OpenTpm {
  return openSwtpmAt({ path: socketPath }, `unix:${socketPath}`)
}

function openSwtpmAt(target: NetConnectOpts, shown: string): OpenTpm {
  let previous = Promise.resolve()
  return async () => {
    let release!: () => void
    const turn = previous
    previous = new Promise<void>((resolve) => (release = resolve))
    await turn
    let socket: Socket
    try {
      socket = await new Promise<Socket>((resolve, reject) => {
        const s = connect(target, () => {
          s.off('error', reject)
          resolve(s)
        })
        s.once('error', reject)
      })
    } catch (cause) {
      release()
      throw new TpmUnavailableError(`connecting to swtpm at ${shown}`, cause)
    }
    return {
      send: (command) => exchange(socket, command),
      close: () =>
        new Promise<void>((resolve) => {
          if (socket.destroyed) return resolve()
          socket.once('close', () => resolve())
          socket.end()
          socket.destroySoon()
        }).finally(release),
    }
  }
}

function exchange(socket: Socket, command: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0)
    const cleanup = () => {
      socket.off('data', onData)
      socket.off('error', onError)
      socket.off('close', onClose)
    }
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (received.length < RESPONSE_HEADER_BYTES) return
      const size = received.readUInt32BE(2)
      if (size < RESPONSE_HEADER_BYTES || size > MAX_RESPONSE_BYTES) {
        cleanup()
        return reject(new TpmError(`swtpm sent a response of impossible size ${size}`))
      }
      if (received.length >= size) {
        cleanup()
        resolve(received.subarray(0, size))
      }
    }
    const onError = (err: Error) => {
      cleanup()
      reject(new TpmError('talking to swtpm', undefined, { cause: err }))
    }
    const onClose = () => {
      cleanup()
      reject(new TpmError('swtpm closed the connection mid-response'))
    }
    socket.on('data', onData)
    socket.once('error', onError)
    socket.once('close', onClose)
    socket.write(command)
  })
}
