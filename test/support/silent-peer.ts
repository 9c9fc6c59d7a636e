/** A TCP peer that accepts and never says a word: what a hung or hostile node looks like to a client. */
import { createServer, type Socket } from 'node:net'

export interface SilentPeer {
  port: number
  /** Resolves when the first accepted connection was closed by the client. */
  firstClosed: Promise<void>
  stop(): Promise<void>
}

export async function startSilentPeer(): Promise<SilentPeer> {
  const sockets = new Set<Socket>()
  let closed!: () => void
  const firstClosed = new Promise<void>((resolve) => (closed = resolve))
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.resume() // read and drop what the client sends, so its hang-up is seen as 'end' then 'close'
    socket.on('error', () => {}) // the client resetting the connection is what we wait for
    socket.once('close', () => {
      sockets.delete(socket)
      closed()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    firstClosed,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
