/**
 * One port, three protocols: Constellation's CLI dials the verification NodePort (30081) with plain
 * gRPC, ours with attested TLS, and Constellation's REST form is a GET. The first byte tells them
 * apart (a TLS record starts 0x16, the HTTP/2 client preface "PRI * HTTP/2.0…", a GET 'G'), so each
 * connection goes to the server for its protocol.
 * Connections are counted per address and in all before anything is read, as listenBounded does.
 */
import type * as grpc from '@grpc/grpc-js'
import type { Socket } from 'node:net'
import { listenLimited, type BoundedListener, type ConnectionLimits } from '../grpc/index.js'
import type { Logger } from '../system/index.js'

const TLS_HANDSHAKE_RECORD = 0x16
// also a POST or PUT, which the HTTP/2 server then refuses: only GET is served over HTTP/1.1
const HTTP2_PREFACE_FIRST_BYTE = 0x50 // 'P' of "PRI * HTTP/2.0"
const HTTP_GET_FIRST_BYTE = 0x47 // 'G' of "GET /?nonce=…"

/** Where each protocol's connections go. */
export interface ProtocolRoutes {
  atls: grpc.Server
  atlsCredentials: grpc.ServerCredentials
  plain: grpc.Server
  plainCredentials: grpc.ServerCredentials
  /** Takes a connection whose first bytes (`first`) were read already. */
  http: (socket: Socket, first: Buffer) => void
}

/**
 * Binds `listen` and routes every admitted connection by its first byte; a connection that sends
 * nothing within `firstByteTimeoutMs`, or something else, is closed.
 */
export async function listenForBothProtocols(
  listen: string,
  routes: ProtocolRoutes,
  configKey: string,
  opts: { limits?: ConnectionLimits; log?: Logger; firstByteTimeoutMs: number },
): Promise<BoundedListener> {
  const atls = routes.atls.createConnectionInjector(routes.atlsCredentials)
  const plain = routes.plain.createConnectionInjector(routes.plainCredentials)
  const route = (socket: Socket, chunk: Buffer) => {
    socket.pause()
    if (chunk[0] === HTTP_GET_FIRST_BYTE) return routes.http(socket, chunk)
    // hand the bytes back so the TLS or HTTP/2 server reads the stream from its start
    socket.unshift(chunk)
    if (chunk[0] === TLS_HANDSHAKE_RECORD) atls.injectConnection(socket)
    else if (chunk[0] === HTTP2_PREFACE_FIRST_BYTE) plain.injectConnection(socket)
    else socket.destroy()
  }
  return listenLimited(
    listen,
    configKey,
    (socket) => {
      const silent = setTimeout(() => socket.destroy(), opts.firstByteTimeoutMs).unref()
      socket.once('data', (chunk: Buffer) => {
        clearTimeout(silent)
        route(socket, chunk)
      })
      socket.once('close', () => clearTimeout(silent))
    },
    opts,
  )
}
