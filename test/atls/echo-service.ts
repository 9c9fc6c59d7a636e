/** A one-method gRPC service over raw bytes, for aTLS tests (real grpc-js on both ends). */
import * as grpc from '@grpc/grpc-js'
import { callRaw, listenOn, rawUnaryMethod } from '../../src/lib/grpc/index.js'
import { clientOn } from '../../src/lib/atls/index.js'

export const EchoService: grpc.ServiceDefinition = { echo: rawUnaryMethod('/test.Echo/Echo') }
export const EchoClient = grpc.makeGenericClientConstructor(EchoService, 'Echo')

export interface RunningServer {
  port: number
  calls: Buffer[]
  stop(): Promise<void>
}

/** Starts a server whose handler records every request it actually ran (a spy). */
export async function startEchoServer(credentials: grpc.ServerCredentials): Promise<RunningServer> {
  const server = new grpc.Server()
  const calls: Buffer[] = []
  server.addService(EchoService, {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      calls.push(call.request)
      cb(null, call.request)
    },
  })
  // as the node's servers listen: credentials that bring a service (tpm-ek's activation) add it
  const address = await listenOn(server, '127.0.0.1:0', credentials, 'test.listen')
  const port = Number(address.split(':').pop())
  return { port, calls, stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) }
}

/** One Echo call on a channel of its own, to 127.0.0.1:`port` or to a channel target. */
export function echo(
  to: number | string,
  credentials: grpc.ChannelCredentials,
  body = Buffer.from('secret'),
): Promise<Buffer> {
  const client = new EchoClient(typeof to === 'number' ? `127.0.0.1:${to}` : to, credentials)
  return callRaw(client, EchoService.echo!.path, body, 20_000).finally(() => client.close())
}

/** One Echo call on an attested channel (openAttestedClientChannel, or a promise of one), which it then closes. */
export async function echoOn(
  channel: grpc.Channel | Promise<grpc.Channel>,
  body = Buffer.from('secret'),
): Promise<Buffer> {
  const open = await channel
  return callRaw(clientOn(open, EchoClient), EchoService.echo!.path, body, 20_000).finally(() => open.close())
}
