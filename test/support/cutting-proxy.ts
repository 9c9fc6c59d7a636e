/**
 * A TCP relay on loopback in front of a server, that a test can cut: every connection through it
 * ends at once on both sides, as a link that breaks under a call (a NAT timing out, a starved VM's
 * network). New connections are relayed again afterwards.
 */
import { connect, createServer, type Socket } from 'node:net'

export interface CuttingProxy {
  /** HOST:PORT to dial instead of the server. */
  address: string
  /** Connections relayed so far. */
  readonly accepted: number
  /** Ends every open connection on both sides (a reset towards the client). */
  cut(): void
  close(): Promise<void>
}

export async function startCuttingProxy(target: string): Promise<CuttingProxy> {
  const [host, port] = splitHostPort(target)
  const open = new Set<Socket>()
  let accepted = 0
  const track = (socket: Socket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
    socket.on('error', () => {}) // the other side's end is reported by 'close'
  }
  const server = createServer((client) => {
    accepted++
    const upstream = connect(port, host)
    track(client)
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.once('close', () => upstream.destroy())
    upstream.once('close', () => client.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const bound = server.address()
  if (!bound || typeof bound === 'string') throw new Error('the proxy has no TCP address')
  return {
    address: `127.0.0.1:${bound.port}`,
    get accepted() {
      return accepted
    },
    cut: () => {
      for (const socket of open) socket.resetAndDestroy()
    },
    close: async () => {
      for (const socket of open) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function splitHostPort(address: string): [string, number] {
  const at = address.lastIndexOf(':')
  return [address.slice(0, at).replace(/^\[|\]$/g, ''), Number(address.slice(at + 1))]
}
