/** What the node daemons share about serving gRPC: binding with a useful error, and grpc-js' own log lines. */
import { setLogger, type Server, type ServerCredentials } from '@grpc/grpc-js'
import { format } from 'node:util'
import { CliError } from '../errors/index.js'
import { formatHostPort, parseHostPort, type Logger } from '../system/index.js'

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
