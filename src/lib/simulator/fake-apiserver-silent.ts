/**
 * SilentApiServer — a TEST DOUBLE for an API server that hangs: it accepts TCP connections on
 * loopback and never sends a byte (no TLS handshake, no answer), like a wedged control plane.
 */
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

export interface SilentApiServer {
  url: string
  /** How many connections it accepted (and left hanging). */
  accepted: () => number
  /** A kubeconfig (YAML) pointing at it. */
  kubeconfig: () => string
  stop: () => Promise<void>
}

export async function startSilentApiServer(): Promise<SilentApiServer> {
  const sockets = new Set<Socket>()
  let count = 0
  const server = createServer((socket) => {
    count++
    sockets.add(socket)
    socket.on('error', () => {}) // the client gives up and resets: expected
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    accepted: () => count,
    kubeconfig: () =>
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: silent, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]`,
        'users: [{name: silent, user: {token: unused}}]',
        'contexts: [{name: silent, context: {cluster: silent, user: silent}}]',
        'current-context: silent',
      ].join('\n'),
    stop: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
