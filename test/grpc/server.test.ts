import { Server, ServerCredentials, setLogger } from '@grpc/grpc-js'
import { listenOn, routeGrpcLogs } from '../../src/lib/grpc/index.js'
import { CliError, exitCodeOf } from '../../src/lib/errors/index.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { holdPort } from '../support/ports.js'

describe('gRPC serving shared by the node daemons', () => {
  let held: Awaited<ReturnType<typeof holdPort>>
  let heldPort: number
  beforeEach(async () => ({ port: heldPort } = held = await holdPort()))
  afterEach(() => held.release())

  it('listenOn resolves with the bound HOST:PORT (port 0 picks one)', async () => {
    const server = new Server()
    try {
      const address = await listenOn(server, '127.0.0.1:0', ServerCredentials.createInsecure(), 'x.listen')
      expect(address).to.match(/^127\.0\.0\.1:\d+$/)
      expect(address).to.not.equal('127.0.0.1:0')
    } finally {
      server.forceShutdown()
    }
  })

  it('listenOn on a taken port is a setup error naming the address and the config key', async () => {
    const server = new Server()
    try {
      const listen = `127.0.0.1:${heldPort}`
      const err = await listenOn(
        server,
        listen,
        ServerCredentials.createInsecure(),
        'initServer.listen',
      ).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(CliError)
      expect(exitCodeOf(err)).to.equal(1)
      expect((err as CliError).message).to.equal(`listening on ${listen}`)
      expect((err as CliError).hint).to.include('initServer.listen')
      expect(String((err as Error).cause)).to.include('EADDRINUSE')
    } finally {
      server.forceShutdown()
    }
  })

  it("routeGrpcLogs turns grpc-js' own error lines into the daemon's JSON log", async () => {
    const lines: string[] = []
    try {
      routeGrpcLogs(createLogger({ format: 'json', write: (l) => lines.push(l), component: 'daemon' }))
      const server = new Server()
      await listenOn(server, `127.0.0.1:${heldPort}`, ServerCredentials.createInsecure(), 'k').catch(() => {})
      server.forceShutdown()
    } finally {
      setLogger(console) // grpc-js' default
    }
    expect(lines).to.not.be.empty
    const entries = lines.map((l) => JSON.parse(l) as { level: string; component: string; msg: string })
    expect(
      entries.some(
        (e) => e.level === 'warn' && e.component.endsWith('grpc') && /No address added/.test(e.msg),
      ),
    ).to.equal(true)
  })
})
