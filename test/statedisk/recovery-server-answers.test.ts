/**
 * What the recovery endpoint answers to each kind of request, and what its own log says about it:
 * which refusal (code and words) for a malformed request, a full queue, a second request from one
 * address, an address in backoff, a wrong secret, a node that recovered already, an error on the
 * node; what becomes of a request whose caller hangs up (waiting, or during the try); and that the
 * server's limits (message size, connections per address) and its stop reach the listener.
 * Real gRPC over aTLS on loopback with the fake attestation authority (the node only carries
 * attestation here); callers are raw HTTP/2 sessions from chosen 127/8 addresses
 * (test/support/raw-peer.ts); the disk is a spy that opens with one key and can hold a try.
 */
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import * as grpc from '@grpc/grpc-js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'
import { CliError } from '../../src/lib/errors/index.js'
import { clusterKmsUri, NO_STORE_URI } from '../../src/lib/kms/index.js'
import { RecoveryRefusedError, RecoveryServer } from '../../src/lib/statedisk/index.js'
import { type RecoveryServerOptions } from '../../src/lib/statedisk/recovery-server.js'
import { createLogger } from '../../src/lib/system/index.js'
import { expect } from '../support/chai.js'
import { holdPort } from '../support/ports.js'
import { RECOVER, RecoveryNode, recoverRequest } from '../support/recovery-node.js'
import {
  connectSilently,
  tlsHandshake,
  type RawCallResult,
  type RawGrpcSession,
  type SilentSocket,
} from '../support/raw-peer.js'

const badKms = () => recoverRequest('kms://x')
const REFUSED = "the master secret does not open this node's state disk; the disk stays closed"
const RECOVERED_ALREADY = 'this node recovered already'

interface Record_ {
  level: string
  msg: string
  component?: string
  [field: string]: unknown
}

describe('recovery endpoint: which answer for which request, and what the node logs', function () {
  this.timeout(30_000)
  let node: RecoveryNode
  let sockets: SilentSocket[]
  const WRONG_KEYS: Buffer[] = []
  const wrongSecret = () => {
    const key = randomBytes(32)
    WRONG_KEYS.push(key)
    return recoverRequest(clusterKmsUri({ key, salt: node.master.salt }))
  }
  beforeEach(() => {
    node = new RecoveryNode()
    sockets = []
  })
  afterEach(async () => {
    for (const s of sockets) s.socket.destroy()
    await node.close()
  })

  const records = (): Record_[] => node.lines.map((l) => JSON.parse(l) as Record_)
  const requests = () => records().filter((r) => r.msg === 'Recovery request')
  const serve = (opts?: Partial<RecoveryServerOptions>) => node.serve(opts)
  const from = (address: string) => node.from(address)
  const rightSecret = (storageUri?: string) => node.rightSecret(storageUri)
  /** Resolves once the node has taken in every call sent before on `session` (calls on one connection arrive in order). */
  const settled = async (session: RawGrpcSession) =>
    expect((await session.call(RECOVER, badKms())).code).to.equal(grpc.status.INVALID_ARGUMENT)
  const expectAnswer = (r: RawCallResult, code: grpc.status, details: string | RegExp) => {
    expect(grpc.status[r.code], r.details).to.equal(grpc.status[code])
    if (typeof details === 'string') expect(r.details).to.equal(details)
    else expect(r.details).to.match(details)
  }
  /** No master secret, wrong or right, in any form, in the node's log. */
  const expectNoSecretLogged = () => {
    const all = node.lines.join('\n')
    for (const key of [node.master.key, node.master.salt, ...WRONG_KEYS]) {
      expect(all).not.to.include(key.toString('hex'))
      expect(all).not.to.include(key.toString('base64').slice(0, 20))
      expect(all).not.to.include(key.toString('base64url').slice(0, 20))
    }
    expect(all).not.to.include('key=')
  }

  it('start logs the address it serves, from the recovery component', async () => {
    const address = await serve()
    const [line] = records()
    expect(line).to.include({
      level: 'info',
      msg: 'Serving recovery: `constellation recover` can send the master secret here',
      component: 'recovery',
      address,
    })
  })

  it('a port it cannot bind: the error names the listen address and recoveryServer.listen', async () => {
    const taken = await holdPort()
    try {
      node.server = new RecoveryServer({
        listen: `127.0.0.1:${taken.port}`,
        credentials: node.credentials(),
        recover: () => Promise.resolve(),
        log: node.log,
      })
      const err = await node.server.start().catch((e: unknown) => e)
      expect(err).to.be.instanceOf(CliError)
      expect((err as CliError).message).to.equal(`listening on 127.0.0.1:${taken.port}`)
      expect((err as CliError).hint).to.include('change recoveryServer.listen in the node config')
    } finally {
      await taken.release()
    }
  })

  it('malformed requests: INVALID_ARGUMENT naming the field, never tried; the log counts them at 1, 2, 4, …', async () => {
    await serve()
    const s = await from('127.0.0.2')
    const kms = 'kms_uri: not a kms://cluster-kms URI with a key and salt'
    const storage = `storage_uri: only ${NO_STORE_URI} is supported`
    for (let i = 0; i < 5; i++)
      expectAnswer(await s.call(RECOVER, badKms()), grpc.status.INVALID_ARGUMENT, kms)
    expectAnswer(
      await s.call(RECOVER, rightSecret('gs://bucket/keys')),
      grpc.status.INVALID_ARGUMENT,
      storage,
    )
    expect(node.tried, 'nothing malformed reaches the disk').to.have.length(0)
    const logged = requests().map(({ peer, verdict, reason, count, component }) => ({
      peer,
      verdict,
      reason,
      count,
      component,
    }))
    expect(logged.map((r) => [r.reason, r.count])).to.deep.equal([
      [kms, 1],
      [kms, 2],
      [kms, 4],
      [storage, 1],
    ])
    for (const r of logged) {
      expect(r.verdict).to.equal('refused')
      expect(r.component).to.equal('recovery')
      expect(r.peer).to.match(/^127\.0\.0\.2:\d+$/)
    }
    expectNoSecretLogged()
  })

  it('an empty storage_uri is the same as storage://no-store: the secret is tried and recovers the node', async () => {
    await serve()
    const r = await (await from('127.0.0.2')).call(RECOVER, rightSecret(''))
    expectAnswer(r, grpc.status.OK, 'OK')
    expect(node.tried).to.have.length(1)
  })

  it('a request over 4 KiB is refused by gRPC before it is parsed or tried', async () => {
    await serve()
    const r = await (await from('127.0.0.2')).call(RECOVER, recoverRequest(`kms://${'a'.repeat(5_000)}`))
    expectAnswer(r, grpc.status.RESOURCE_EXHAUSTED, /larger than max/)
    expect(node.tried).to.have.length(0)
    expect(requests(), 'the server never saw it').to.have.length(0)
  })

  it('a wrong secret: PERMISSION_DENIED without the disk; the log names the peer, the verdict and the disk', async () => {
    await serve()
    const r = await (await from('127.0.0.2')).call(RECOVER, wrongSecret())
    expectAnswer(r, grpc.status.PERMISSION_DENIED, REFUSED)
    const [line] = requests()
    expect(line).to.deep.include({
      level: 'info',
      component: 'recovery',
      verdict: 'refused',
      reason: `the master secret does not open this node's state disk ${node.diskUuid}`,
    })
    expect(line?.peer).to.match(/^127\.0\.0\.2:\d+$/)
    expect(line).not.to.have.property('count')
    expectNoSecretLogged()
  })

  it('the right secret: OK, logged as recovered with no reason and no warning; then every request is FAILED_PRECONDITION, untried', async () => {
    await serve()
    const a = await from('127.0.0.2')
    expectAnswer(await a.call(RECOVER, rightSecret()), grpc.status.OK, 'OK')
    const [recovered] = requests()
    expect(recovered).to.deep.include({ level: 'info', component: 'recovery', verdict: 'recovered' })
    expect(recovered?.peer).to.match(/^127\.0\.0\.2:\d+$/)
    expect(recovered).not.to.have.property('reason')
    expect(records().filter((r) => r.level !== 'info')).to.deep.equal([])
    const b = await from('127.0.0.3')
    expectAnswer(await b.call(RECOVER, rightSecret()), grpc.status.FAILED_PRECONDITION, RECOVERED_ALREADY)
    expectAnswer(await b.call(RECOVER, wrongSecret()), grpc.status.FAILED_PRECONDITION, RECOVERED_ALREADY)
    expect(node.tried, 'the disk is tried once').to.have.length(1)
    // refused as they arrive, without a place in the queue: counted like every untried request
    expect(
      requests()
        .slice(1)
        .map((r) => [r.verdict, r.reason, r.count]),
    ).to.deep.equal([
      ['refused', RECOVERED_ALREADY, 1],
      ['refused', RECOVERED_ALREADY, 2],
    ])
    expectNoSecretLogged()
  })

  it('a request queued behind the try that recovers: FAILED_PRECONDITION, its secret never tried', async () => {
    await serve()
    const release = node.holdTries()
    const first = (await from('127.0.0.2')).call(RECOVER, rightSecret())
    const b = await from('127.0.0.3')
    const queued = b.call(RECOVER, wrongSecret())
    await settled(b)
    release()
    expectAnswer(await first, grpc.status.OK, 'OK')
    expectAnswer(await queued, grpc.status.FAILED_PRECONDITION, RECOVERED_ALREADY)
    expect(node.tried, 'only the first secret reached the disk').to.have.length(1)
    const answer = requests().find((r) => r.verdict !== 'recovered' && r.reason === RECOVERED_ALREADY)
    expect(answer).to.include({ verdict: 'refused' })
    expect(answer, 'answered from the queue, not counted as untried').not.to.have.property('count')
    expect(answer?.peer).to.match(/^127\.0\.0\.3:\d+$/)
  })

  it('an error on the node that is not a refusal: INTERNAL, its cause only in the log, and no backoff for the caller', async () => {
    await serve({ requests: { backoffInitialMs: 60_000 } })
    node.diskFault = new Error('cryptsetup: device busy')
    const a = await from('127.0.0.2')
    const details = "recovery failed on the node; the node's log says why"
    expectAnswer(await a.call(RECOVER, wrongSecret()), grpc.status.INTERNAL, details)
    const failed = records().find((r) => r.msg === 'Recovery failed')
    expect(failed).to.include({ level: 'error', component: 'recovery' })
    expect(failed?.error).to.include('cryptsetup: device busy')
    expect(requests()[0]).to.include({ verdict: 'error', reason: details })
    node.diskFault = undefined
    // an error is not a wrong secret: the address is not made to wait
    expectAnswer(await a.call(RECOVER, wrongSecret()), grpc.status.PERMISSION_DENIED, REFUSED)
    expect(node.tried).to.have.length(2)
  })

  describe('requests not queued: RESOURCE_EXHAUSTED, which reason, and when to come back', () => {
    const notQueued = (r: RawCallResult, words: string, seconds: RegExp) => {
      expect(grpc.status[r.code]).to.equal('RESOURCE_EXHAUSTED')
      expect(r.details.startsWith(`${words}; retry in `), r.details).to.equal(true)
      expect(r.details.slice(words.length)).to.match(seconds)
    }
    const refusalLogged = (words: string, address: string) => {
      const line = requests().find((r) => r.reason === words)
      expect(line, `a log line for "${words}"`).to.include({ verdict: 'refused', count: 1 })
      expect(line?.peer).to.match(new RegExp(`^${address.replaceAll('.', '\\.')}:\\d+$`))
    }

    it('the queue is full: busy', async () => {
      await serve({ requests: { queued: 1 } })
      const release = node.holdTries()
      const caller = await from('127.0.0.2')
      const first = caller.call(RECOVER, wrongSecret())
      const words = 'the node is trying other master secrets, as many as it queues'
      await settled(caller)
      const busy = await (await from('127.0.0.3')).call(RECOVER, wrongSecret())
      notQueued(busy, words, /^; retry in 1 s$/)
      expect(busy.headers['grpc-retry-pushback-ms']).to.equal('1000')
      refusalLogged(words, '127.0.0.3')
      release()
      expectAnswer(await first, grpc.status.PERMISSION_DENIED, REFUSED)
      expect(node.tried).to.have.length(1)
    })

    it('this address has a request waiting: peer', async () => {
      await serve()
      const release = node.holdTries()
      const a = await from('127.0.0.2')
      const first = a.call(RECOVER, wrongSecret())
      await settled(a)
      const words = 'a master secret from this address is waiting already'
      notQueued(await a.call(RECOVER, wrongSecret()), words, /^; retry in 1 s$/)
      refusalLogged(words, '127.0.0.2')
      release()
      expectAnswer(await first, grpc.status.PERMISSION_DENIED, REFUSED)
      expect(node.tried).to.have.length(1)
    })

    it('this address sent a wrong secret a moment ago: backoff', async () => {
      await serve({ requests: { backoffInitialMs: 60_000 } })
      const a = await from('127.0.0.2')
      expectAnswer(await a.call(RECOVER, wrongSecret()), grpc.status.PERMISSION_DENIED, REFUSED)
      const words = 'too many wrong master secrets from this address'
      const r = await a.call(RECOVER, rightSecret())
      notQueued(r, words, /^; retry in (60|59\.\d) s$/)
      refusalLogged(words, '127.0.0.2')
      expect(node.tried, 'the right secret in backoff is not tried').to.have.length(1)
      expectNoSecretLogged()
    })
  })

  it('a caller that hangs up while waiting leaves the queue at once: logged as dropped, its address may queue again', async () => {
    await serve()
    const release = node.holdTries()
    const first = (await from('127.0.0.2')).call(RECOVER, wrongSecret())
    const b = await from('127.0.0.3')
    const hangUp = new AbortController()
    const abandoned = b.call(RECOVER, rightSecret(), { cancel: hangUp.signal })
    await settled(b) // queued
    hangUp.abort()
    await abandoned
    await settled(b) // its hang-up is seen
    const dropped = requests().find((r) => r.verdict === 'dropped')
    expect(dropped).to.include({
      component: 'recovery',
      reason: 'the caller hung up before its master secret was tried',
      count: 1,
    })
    expect(dropped?.peer).to.match(/^127\.0\.0\.3:\d+$/)
    // while the first try is still held, the address that hung up has no request waiting any more
    const again = b.call(RECOVER, wrongSecret())
    await settled(b)
    release()
    expectAnswer(await first, grpc.status.PERMISSION_DENIED, REFUSED)
    expectAnswer(await again, grpc.status.PERMISSION_DENIED, REFUSED)
    expect(
      node.tried.map((k) => (k.equals(node.master.key) ? 'right' : 'wrong')),
      'the abandoned right secret was never tried',
    ).to.deep.equal(['wrong', 'wrong'])
  })

  it('a caller that hangs up during the try that recovers: the node recovers and warns, naming the caller; nothing is dropped', async () => {
    await serve()
    const release = node.holdTries()
    const a = await from('127.0.0.2')
    const hangUp = new AbortController()
    const abandoned = a.call(RECOVER, rightSecret(), { cancel: hangUp.signal })
    await settled(a) // being node.tried
    hangUp.abort()
    await abandoned
    await settled(a) // its hang-up is seen
    release()
    // a later request is answered once the held try is over
    expectAnswer(
      await (await from('127.0.0.3')).call(RECOVER, wrongSecret()),
      grpc.status.FAILED_PRECONDITION,
      RECOVERED_ALREADY,
    )
    const warned = records().filter((r) => r.level === 'warn')
    expect(warned).to.have.length(1)
    expect(warned[0]?.msg).to.match(/^Recovered, but the caller hung up during the try/)
    expect(warned[0]?.peer).to.match(/^127\.0\.0\.2:\d+$/)
    expect(requests().find((r) => r.verdict === 'recovered')?.peer).to.equal(warned[0]?.peer)
    expect(requests().filter((r) => r.verdict === 'dropped')).to.deep.equal([])
    expect(node.tried).to.have.length(1)
  })

  it('connection limits reach the listener: a connection over the per-address limit is closed, and logged', async () => {
    await serve({ connections: { perPeer: 1 } })
    sockets.push(await connectSilently(node.port, '127.0.0.2'))
    const nonce = encodeNonce(randomBytes(32))
    expect(await tlsHandshake(node.port, '127.0.0.2', nonce)).to.equal('refused')
    expect(await tlsHandshake(node.port, '127.0.0.3', nonce)).to.equal('connected')
    expect(records().find((r) => r.msg === 'Refusing connections over a limit')).to.include({
      level: 'warn',
      component: 'recovery',
      address: '127.0.0.2',
      limit: 'peer',
    })
  })

  it('stop closes the port, and a second stop is the same stop; a server never started stops too', async () => {
    await serve()
    const stopping = node.server?.stop(100)
    expect(node.server?.stop(100)).to.equal(stopping)
    await stopping
    const refused = await new Promise<string>((resolve) => {
      const s = connect({ host: '127.0.0.1', port: node.port }, () => (s.destroy(), resolve('connected')))
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'))
    })
    expect(refused).to.equal('ECONNREFUSED')
    const never = new RecoveryServer({
      listen: '127.0.0.1:0',
      credentials: node.credentials(),
      recover: () => Promise.resolve(),
      log: createLogger({ format: 'json', write: () => {} }),
    })
    await never.stop(100)
  })

  it('the refusal a disk raises is a RecoveryRefusedError by name', () => {
    const err = new RecoveryRefusedError('wrong key')
    expect(err.name).to.equal('RecoveryRefusedError')
    expect(err.message).to.equal('wrong key')
  })
})
