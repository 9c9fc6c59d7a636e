/**
 * What an attacker runs against our servers: connections from a chosen loopback source address
 * (Linux lets a client bind any 127/8 address, so each is another peer to the server; grpc-js cannot
 * bind one), sockets that never speak, TLS handshakes, and gRPC calls written by hand over node:http2.
 */
import { once } from 'node:events'
import * as http2 from 'node:http2'
import { connect, type Socket } from 'node:net'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'

const HOST = '127.0.0.1'

export interface SilentSocket {
  socket: Socket
  /** Resolves when the server closed the connection (it never does on its own for an unbounded server). */
  closed: Promise<void>
}

/** A TCP connection from `localAddress` that sends nothing. */
export async function connectSilently(port: number, localAddress: string): Promise<SilentSocket> {
  const socket = connect({ host: HOST, port, localAddress })
  socket.on('error', () => {}) // a reset by the server is one way of being closed
  const closed = once(socket, 'close').then(() => undefined)
  await Promise.race([once(socket, 'connect'), closed])
  return { socket, closed }
}

/** Whether a TLS handshake from `localAddress` completes ('refused': the server closed the connection). */
export function tlsHandshake(
  port: number,
  localAddress: string,
  servername: string,
): Promise<'connected' | 'refused'> {
  return new Promise((resolve) => {
    const tls = tlsFrom(port, localAddress, servername)
    tls.once('secureConnect', () => {
      tls.destroy()
      resolve('connected')
    })
    tls.once('error', () => resolve('refused'))
    tls.once('close', () => resolve('refused'))
  })
}

/** TLS over a TCP connection bound to `localAddress`; the server's certificate is not checked. */
function tlsFrom(port: number, localAddress: string, servername: string): TLSSocket {
  const tcp = connect({ host: HOST, port, localAddress })
  tcp.on('error', () => {}) // the TLS socket reports it
  return tlsConnect({ socket: tcp, servername, ALPNProtocols: ['h2'], rejectUnauthorized: false, ca: [] })
}

/** A TLS connection from `localAddress` that, once the handshake is done, says nothing more. */
export async function connectTlsSilently(
  port: number,
  localAddress: string,
  servername: string,
): Promise<SilentSocket> {
  const socket = tlsFrom(port, localAddress, servername)
  socket.on('error', () => {})
  socket.resume() // read and drop what the server sends, so that its hang-up is seen
  const closed = once(socket, 'close').then(() => undefined)
  await Promise.race([once(socket, 'secureConnect'), closed])
  return { socket, closed }
}

/** The code of a call that could not be sent or got no status: the connection is gone. */
export const GONE = -1

export interface RawCallResult {
  /** A gRPC status code, or GONE. */
  code: number
  details: string
  message?: Buffer
  headers: http2.IncomingHttpHeaders
}

export interface RawGrpcSession {
  /** A unary call with an already-serialized message; `cancel` resets the stream once the request is sent. */
  call(path: string, message: Buffer, opts?: { cancel?: AbortSignal }): Promise<RawCallResult>
  close(): Promise<void>
}

/** One HTTP/2 connection over TLS from `localAddress`; `servername` is the SNI (a nonce for aTLS). */
export async function openRawGrpc(
  port: number,
  localAddress: string,
  servername: string,
): Promise<RawGrpcSession> {
  const session = http2.connect(`https://${HOST}:${port}`, {
    createConnection: () => tlsFrom(port, localAddress, servername),
  })
  session.on('error', () => {}) // each call reports its own failure
  await Promise.race([
    once(session, 'connect'),
    once(session, 'close').then(() => {
      throw new Error(`no HTTP/2 session from ${localAddress} to port ${port}`)
    }),
  ])
  return {
    call: (path, message, opts = {}) => rawCall(session, path, message, opts.cancel),
    close: () =>
      new Promise<void>((resolve) => {
        if (session.closed) return resolve()
        session.close(() => resolve())
        session.destroy()
      }),
  }
}

function rawCall(
  session: http2.ClientHttp2Session,
  path: string,
  message: Buffer,
  cancel?: AbortSignal,
): Promise<RawCallResult> {
  return new Promise((resolve) => {
    if (session.closed || session.destroyed)
      return resolve({ code: GONE, details: 'the connection is gone', headers: {} })
    let stream: http2.ClientHttp2Stream
    try {
      stream = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      })
    } catch (err) {
      // the server sent GOAWAY (it stopped, or closed an idle connection)
      return resolve({ code: GONE, details: err instanceof Error ? err.message : String(err), headers: {} })
    }
    const frame = Buffer.alloc(5)
    frame.writeUInt32BE(message.length, 1)
    stream.end(Buffer.concat([frame, message]))
    let headers: http2.IncomingHttpHeaders = {}
    const chunks: Buffer[] = []
    stream.on('response', (h) => (headers = { ...h }))
    stream.on('trailers', (t) => (headers = { ...headers, ...t }))
    stream.on('data', (d: Buffer) => chunks.push(d))
    stream.on('error', () => {})
    cancel?.addEventListener('abort', () => stream.close(http2.constants.NGHTTP2_CANCEL), { once: true })
    stream.on('close', () => {
      const body = Buffer.concat(chunks)
      const status = headers['grpc-status']
      resolve({
        code: status === undefined ? GONE : Number(status),
        details: decodeURIComponent(String(headers['grpc-message'] ?? '')),
        message: body.length >= 5 ? body.subarray(5, 5 + body.readUInt32BE(1)) : undefined,
        headers,
      })
    })
  })
}
