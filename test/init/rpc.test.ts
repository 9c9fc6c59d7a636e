import { Server, ServerCredentials, credentials, status, type ServerWritableStream } from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { startCuttingProxy } from '../support/cutting-proxy.js'
import { eventually } from '../support/eventually.js'
import { APIService, InitRequest, type InitResponse } from '../../src/gen/init.js'
import { createLogger, type Logger } from '../../src/lib/system/index.js'
import { callInit, NotConnectedError } from '../../src/lib/init/rpc.js'
import { silentLogger } from '../../src/lib/system/logger.js'

// These cases test only the client's retry rule, so the channel is plain gRPC on loopback;
// the attested path is covered end to end in flow.test.ts.
const request = InitRequest.fromPartial({})

async function startServer(handler: (call: ServerWritableStream<InitRequest, InitResponse>) => void) {
  const server = new Server()
  server.addService(APIService, { init: handler })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  )
  return { address: `127.0.0.1:${port}`, stop: () => new Promise<void>((r) => server.tryShutdown(() => r())) }
}

const call = (address: string, timeoutMs: number, log: Logger = silentLogger) =>
  callInit(request, {
    address,
    credentials: credentials.createInsecure(),
    signal: AbortSignal.timeout(timeoutMs),
    deadline: new Date(Date.now() + timeoutMs),
    log,
    retryInitialDelayMs: 50,
  })

describe('init call retry rule', function () {
  this.timeout(30_000)

  it('never repeats a call that reached the node, even when it ends UNAVAILABLE', async () => {
    let calls = 0
    const server = await startServer((c) => {
      calls++
      c.emit('error', { code: status.UNAVAILABLE, details: 'node went away' })
    })
    try {
      const outcome = await call(server.address, 5_000)
      expect(outcome).to.deep.include({ ok: false, error: 'node went away' })
      expect(calls).to.equal(1)
    } finally {
      await server.stop()
    }
  })

  it('collects the failure and every log chunk until the terminal status', async () => {
    const server = await startServer((c) => {
      c.write({ kind: { $case: 'initFailure', value: { error: 'rpc error: code = INTERNAL desc = boom' } } })
      c.write({ kind: { $case: 'log', value: { log: Buffer.from('a\n') } } })
      c.write({ kind: { $case: 'log', value: { log: Buffer.from('b\n') } } })
      c.emit('error', { code: status.INTERNAL, details: 'boom' })
    })
    try {
      const outcome = await call(server.address, 5_000)
      expect(outcome.ok).to.equal(false)
      if (!outcome.ok) {
        expect(outcome.error).to.equal('rpc error: code = INTERNAL desc = boom')
        expect(outcome.logs.toString()).to.equal('a\nb\n')
        expect(outcome.dropped, "the node's own refusal is no broken connection").to.not.equal(true)
      }
    } finally {
      await server.stop()
    }
  })

  it('a connection that breaks under the call is reported as dropped, and the call is not repeated', async () => {
    let calls = 0
    const server = await startServer(() => calls++) // takes the request, never answers
    const proxy = await startCuttingProxy(server.address)
    try {
      const outcome = call(proxy.address, 10_000)
      await eventually('the node to get the request', async () => calls === 1 || undefined, 5_000)
      proxy.cut()
      const result = await outcome
      expect(result).to.deep.include({ ok: false, dropped: true })
      expect(calls).to.equal(1)
      expect(proxy.accepted).to.equal(1)
    } finally {
      await proxy.close()
      await server.stop()
    }
  })

  it('keeps retrying a refused connection until the timeout, then reports it unreachable', async () => {
    const server = await startServer(() => {})
    const address = server.address
    await server.stop()
    const lines: string[] = []
    const spyLog = createLogger({ format: 'json', level: 'info', write: (l) => lines.push(l) })
    await expect(call(address, 1_000, spyLog)).to.be.rejected.then((err: unknown) => {
      expect(
        err instanceof NotConnectedError || (err instanceof Error && err.name === 'TimeoutError'),
      ).to.equal(true)
    })
  })

  it('pickRequest: the message waits for the connection, then the picked request is what the node gets', async () => {
    const received: InitRequest[] = []
    const server = await startServer((c) => {
      received.push(c.request)
      c.write({
        kind: {
          $case: 'initSuccess',
          value: { kubeconfig: Buffer.from('k'), clusterId: Buffer.alloc(32), ownerId: Buffer.alloc(0) },
        },
      })
      c.end()
    })
    let connected = false
    try {
      const outcome = await callInit(request, {
        address: server.address,
        credentials: credentials.createInsecure(),
        signal: AbortSignal.timeout(5_000),
        deadline: new Date(Date.now() + 5_000),
        log: silentLogger,
        onConnected: () => (connected = true),
        pickRequest: () => {
          expect(connected, 'picked only once connected').to.equal(true)
          return InitRequest.fromPartial({
            initSecret: Buffer.from('picked'),
            resumeProof: Buffer.alloc(64, 1),
          })
        },
      })
      expect(outcome.ok).to.equal(true)
      expect(received).to.have.length(1)
      expect(received[0]?.initSecret.toString()).to.equal('picked')
      expect(received[0]?.resumeProof).to.deep.equal(Buffer.alloc(64, 1))
    } finally {
      await server.stop()
    }
  })

  it('sendAfter: the request waits for it as well as for the connection; onConnected once both are done', async () => {
    const events: string[] = []
    const server = await startServer((c) => {
      events.push('node got the request')
      c.write({
        kind: {
          $case: 'initSuccess',
          value: { kubeconfig: Buffer.from('k'), clusterId: Buffer.alloc(32), ownerId: Buffer.alloc(0) },
        },
      })
      c.end()
    })
    try {
      let written = () => {}
      const sendAfter = new Promise<void>((resolve) => (written = resolve))
      const outcome = callInit(request, {
        address: server.address,
        credentials: credentials.createInsecure(),
        signal: AbortSignal.timeout(5_000),
        deadline: new Date(Date.now() + 5_000),
        log: silentLogger,
        sendAfter,
        onConnected: () => events.push('connected'),
      })
      await new Promise((resolve) => setTimeout(resolve, 300)) // ample time to connect and send
      events.push('written')
      written()
      expect((await outcome).ok).to.equal(true)
      expect(events).to.deep.equal(['written', 'connected', 'node got the request'])
    } finally {
      await server.stop()
    }
  })

  it('sendAfter rejected: nothing is sent, and the aborted call settles', async () => {
    let requests = 0
    const server = await startServer(() => requests++)
    try {
      const abort = new AbortController()
      let failWrite = (_err: Error) => {}
      const sendAfter = new Promise<void>((_resolve, reject) => (failWrite = reject))
      const outcome = callInit(request, {
        address: server.address,
        credentials: credentials.createInsecure(),
        signal: abort.signal,
        deadline: new Date(Date.now() + 5_000),
        log: silentLogger,
        sendAfter,
      })
      await new Promise((resolve) => setTimeout(resolve, 300))
      failWrite(new Error('disk full'))
      abort.abort()
      const settled = await outcome.then(
        (o) => o.ok,
        () => 'rejected',
      )
      expect(settled).to.not.equal(true)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(requests).to.equal(0)
    } finally {
      await server.stop()
    }
  })
})
