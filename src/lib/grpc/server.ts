/** What the node daemons share about serving gRPC: binding with a useful error, and grpc-js' own log lines. */
import { setLogger, type Server, type ServerCredentials } from '@grpc/grpc-js'
import { createServer as createNetServer, type Socket } from 'node:net'
import { format } from 'node:util'
import { CliError } from '../errors/index.js'
import { formatHostPort, parseHostPort, type Logger } from '../system/index.js'
import { ConnectionLimiter, type ConnectionLimits } from './connection-limits.js'

/**
 * Server credentials that come with a service of their own, which every server using them must
 * offer (aTLS with tpm-ek: the credential activation its clients ask for after the handshake).
 */
export interface CredentialsWithServices {
  addServicesTo(server: Server): void
}

const bringsServices = (c: ServerCredentials): c is ServerCredentials & CredentialsWithServices =>
  typeof (c as Partial<CredentialsWithServices>).addServicesTo === 'function'

/**
 * Binds `listen` (HOST:PORT, as the node config holds it) and resolves with the bound HOST:PORT.
 * A bind failure (port taken, address not on this host, privileged port) is the node's setup, so
 * it names the config key to change.
 * Credentials that bring services of their own (CredentialsWithServices) add them first.
 */
export async function listenOn(
  server: Server,
  listen: string,
  credentials: ServerCredentials,
  configKey: string,
): Promise<string> {
  if (bringsServices(credentials)) credentials.addServicesTo(server)
  const { host, port } = parseHostPort(listen, { requirePort: true, allowPortZero: true })
  const target = formatHostPort(host, port)
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(target, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  ).catch((cause: unknown) => {
    throw new CliError(`listening on ${listen}`, {
      hint: `is another process listening there? stop it, or change ${configKey} in the node config`,
      cause,
    })
  })
  return formatHostPort(host, bound)
}

export interface BoundedListener {
  /** The bound HOST:PORT. */
  address: string
  /** Stops accepting; the connections already handed over end with the gRPC server's shutdown. */
  close(): void
  /**
   * Closes every connection still open: after the gRPC server's shutdown, those are the ones still
   * in their TLS handshake, which grpc-js does not know of and which would keep the process alive.
   */
  destroy(): void
}

/**
 * listenOn for a server that unauthenticated peers reach: its own TCP listener counts connections
 * per remote address and in all (ConnectionLimiter) before grpc-js sees them, and hands the rest
 * to the gRPC server, whose credentials run the TLS handshake (with their handshake timeout).
 */
export async function listenBounded(
  server: Server,
  listen: string,
  credentials: ServerCredentials,
  configKey: string,
  opts: { limits?: ConnectionLimits; log?: Logger } = {},
): Promise<BoundedListener> {
  if (bringsServices(credentials)) credentials.addServicesTo(server)
  const injector = server.createConnectionInjector(credentials)
  return listenLimited(listen, configKey, (socket) => injector.injectConnection(socket), opts)
}

/**
 * A TCP listener on `listen` that admits each connection through a ConnectionLimiter (per remote
 * address and in all) and hands the admitted ones to `accept`; a port it cannot bind fails naming
 * `configKey`, the node config's key to change.
 */
export async function listenLimited(
  listen: string,
  configKey: string,
  accept: (socket: Socket) => void,
  opts: { limits?: ConnectionLimits; log?: Logger } = {},
): Promise<BoundedListener> {
  const { host, port } = parseHostPort(listen, { requirePort: true, allowPortZero: true })
  const limiter = new ConnectionLimiter(opts.limits, (refusal) =>
    opts.log?.warn('Refusing connections over a limit', { ...refusal }),
  )
  const open = new Set<Socket>()
  const tcp = createNetServer((socket) => {
    if (!limiter.admit(socket)) return
    open.add(socket)
    socket.once('close', () => open.delete(socket))
    accept(socket)
  })
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject)
    tcp.listen(port, host, () => resolve())
  }).catch((cause: unknown) => {
    throw new CliError(`listening on ${listen}`, {
      hint: `is another process listening there? stop it, or change ${configKey} in the node config`,
      cause,
    })
  })
  const bound = tcp.address()
  return {
    address: formatHostPort(host, typeof bound === 'object' && bound ? bound.port : port),
    close: () => tcp.close(),
    destroy: () => {
      for (const socket of open) socket.destroy()
    },
  }
}

/** Lets calls in flight finish, then force-stops whatever is left once graceMs has passed. */
export async function shutdownGracefully(server: Server, graceMs: number): Promise<void> {
  const force = setTimeout(() => server.forceShutdown(), graceMs).unref()
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()))
  clearTimeout(force)
}

/**
 * grpc-js writes its own errors to stderr as plain text, which would break a daemon's JSON-lines
 * log; this sends them through the daemon's logger instead. Process-wide: call it from a daemon's
 * production wiring only.
 */
export function routeGrpcLogs(log: Logger): void {
  const grpc = log.child('grpc')
  setLogger({
    error: (...args: unknown[]) => grpc.warn(format(...args)),
    info: (...args: unknown[]) => grpc.info(format(...args)),
    debug: (...args: unknown[]) => grpc.debug(format(...args)),
  })
}
