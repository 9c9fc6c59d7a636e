/** Loopback ports for servers the tests (and benchmarks) start. */
import { randomInt } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'

const HOST = '127.0.0.1'

/**
 * A port that was free a moment ago, for a server a test starts later. Not from the ephemeral
 * range: there the kernel gives a released port to the next bind(0) of any process, and a parallel
 * test's HTTP server once took a join service's port in the seconds before the service bound it
 * (its TLS client then read "wrong version number"). Below that range only ports picked like this
 * one compete, at random among ~20,000.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow()
  for (;;) {
    const port = randomInt(10_000, low)
    if (await bindable(port)) return port
  }
}

/** A loopback port kept busy by a plain TCP listener until `release`, for testing a taken port. */
export async function holdPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const srv = createServer()
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(0, HOST, resolve)
  })
  const addr = srv.address()
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    release: () => new Promise<void>((resolve) => srv.close(() => resolve())),
  }
}

/** Resolves once something accepts on the port; `gaveUp` ends the wait early (e.g. the server exited). */
export async function waitForPort(
  port: number,
  {
    gaveUp = () => false,
    timeoutMs = 30_000,
    host = HOST,
  }: { gaveUp?: () => boolean; timeoutMs?: number; host?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (gaveUp()) throw new Error(`gave up waiting for port ${port}`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host, port }, () => (s.destroy(), resolve(true)))
      s.once('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`nothing accepted on ${host}:${port} within ${timeoutMs} ms`)
}

/**
 * Whether this process itself still listens on the TCP port. Asking the port (a connect) would also
 * see a listener that a test run beside this one bound after ours closed: /proc tells whose it is.
 */
export async function listeningHere(port: number): Promise<boolean> {
  const { readFile, readdir, readlink } = await import('node:fs/promises')
  const ours = new Set<string>()
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '')
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
    if (inode) ours.add(inode)
  }
  const LISTEN = '0A'
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = (await readFile(table, 'utf8').catch(() => '')).split('\n').slice(1)
    for (const line of lines) {
      const f = line.trim().split(/\s+/)
      const [, local, , state, , , , , , inode] = f
      if (
        state === LISTEN &&
        local &&
        parseInt(local.split(':')[1] ?? '', 16) === port &&
        ours.has(inode ?? '')
      )
        return true
    }
  }
  return false
}

/** A random address of 127/8 (all of it is local): a service there may own a fixed port, such as 30081. */
export const ownLoopback = (): string =>
  `127.${[1, 2, 3].map(() => 1 + Math.floor(Math.random() * 250)).join('.')}`

/**
 * Two adjacent free ports (swtpm's server and control port). Not from the ephemeral range: the
 * kernel hands bind(0) odd ports there and outgoing connections the even ones, so the port after
 * a bind(0) port is often some connection's local port while other tests run. Below that range
 * only listeners compete, and both ports are tried before they are returned.
 */
export async function freePortPair(): Promise<number> {
  const low = ephemeralLow()
  for (;;) {
    const port = 2 * randomInt(5_000, Math.floor(low / 2) - 1)
    if ((await bindable(port)) && (await bindable(port + 1))) return port
  }
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > 12_000 ? low : 32_768
  } catch {
    return 32_768
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.once('error', () => resolve(false))
    srv.listen(port, HOST, () => srv.close(() => resolve(true)))
  })
}
