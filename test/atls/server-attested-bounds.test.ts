/**
 * What an unauthenticated peer can cost the server-attested servers (recovery on :9999, the
 * verification service): a socket that never speaks is closed after the handshake timeout, and one
 * address holds at most its cap of connections while others still connect. The node attests with
 * the fake authority (these servers merely carry attestation); peers are loopback addresses.
 */
import { randomBytes } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import {
  createAttestedChannelCredentials,
  createAttestedServerCredentials,
} from '../../src/lib/atls/index.js'
import { encodeNonce } from '../../src/lib/atls/nonce.js'
import type { ConnectionLimits } from '../../src/lib/grpc/index.js'
import { RecoveryServer } from '../../src/lib/statedisk/index.js'
import { createLogger } from '../../src/lib/system/index.js'
import { VerifyServiceDaemon } from '../../src/lib/verify/index.js'
import { VerifyService } from '../../src/lib/verify/service-definition.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { createFakeAttestation } from '../support/fake-attestation.js'
import { connectSilently, connectTlsSilently, tlsHandshake, type SilentSocket } from '../support/raw-peer.js'

const fake = createFakeAttestation()
const silentLog = createLogger({ format: 'json', write: () => {} })

interface Running {
  port: number
  /** A genuine call over aTLS: resolves once answered. */
  genuineCall(): Promise<void>
  stop(): Promise<void>
}

const servers: Record<string, (limits: ConnectionLimits, handshakeTimeoutMs: number) => Promise<Running>> = {
  'recovery server': async (limits, handshakeTimeoutMs) => {
    const server = new RecoveryServer({
      listen: '127.0.0.1:0',
      credentials: createAttestedServerCredentials({ issuer: fake.issuer(), handshakeTimeoutMs }),
      recover: () => Promise.resolve(),
      log: silentLog,
      connections: limits,
    })
    const address = await server.start()
    return {
      port: portOf(address),
      genuineCall: () => call(address, '/recoverproto.API/Recover'),
      stop: () => server.stop(100),
    }
  },
  'verification service': async (limits, handshakeTimeoutMs) => {
    const daemon = new VerifyServiceDaemon('127.0.0.1:0', fake.issuer(), silentLog, undefined, {
      limits,
      handshakeTimeoutMs,
    })
    const address = await daemon.start()
    return {
      port: portOf(address),
      genuineCall: () => call(address, VerifyService.describe!.path),
      stop: () => daemon.stop(100),
    }
  },
}

const portOf = (address: string) => Number(address.split(':').pop())
const sni = () => encodeNonce(randomBytes(32))

/** A unary call with an empty message over aTLS that checks the fake attestation. */
async function call(address: string, path: string): Promise<void> {
  const client = new grpc.Client(
    address,
    createAttestedChannelCredentials({ validators: [fake.validator()] }),
  )
  try {
    await new Promise<void>((resolve, reject) =>
      client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        { deadline: Date.now() + 10_000 },
        (err) => (err && err.code !== grpc.status.INVALID_ARGUMENT ? reject(err) : resolve()),
      ),
    )
  } finally {
    client.close()
  }
}

for (const [name, start] of Object.entries(servers))
  describe(`${name}: handshake timeout and per-peer connection caps`, function () {
    this.timeout(20_000)
    let running: Running | undefined
    let sockets: SilentSocket[]
    beforeEach(() => (sockets = []))
    afterEach(async () => {
      for (const s of sockets) s.socket.destroy()
      await running?.stop()
      running = undefined
    })
    const silent = async (from: string) => {
      const s = await connectSilently(running!.port, from)
      sockets.push(s)
      return s
    }

    it('closes a connection that never starts its TLS handshake once the handshake timeout passed', async () => {
      running = await start({}, 200)
      await (
        await silent('127.0.0.2')
      ).closed // before: Node's default, 120 s
    })

    it('closes a connection that opened no call once the idle timeout passed', async () => {
      running = await start({ idleTimeoutMs: 200 }, 30_000)
      const idle = await connectTlsSilently(running.port, '127.0.0.2', sni())
      sockets.push(idle)
      await idle.closed
    })

    it('stop closes a connection still in its TLS handshake', async () => {
      running = await start({}, 30_000)
      const quiet = await silent('127.0.0.2')
      await running.stop()
      running = undefined
      await quiet.closed // before: open until its handshake timeout, keeping the node's process alive
    })

    it("refuses an address's connection beyond its cap while another address still connects", async () => {
      running = await start({ perPeer: 3 }, 30_000)
      for (let i = 0; i < 3; i++) await silent('127.0.0.2')
      expect(await tlsHandshake(running.port, '127.0.0.2', sni()), 'the 4th from 127.0.0.2').to.equal(
        'refused',
      )
      expect(await tlsHandshake(running.port, '127.0.0.3', sni()), 'from 127.0.0.3').to.equal('connected')
      await running.genuineCall() // from 127.0.0.1
      sockets.pop()?.socket.destroy()
      await eventually('a slot freed for 127.0.0.2', async () =>
        (await tlsHandshake(running!.port, '127.0.0.2', sni())) === 'connected' ? true : undefined,
      )
    })

    it('refuses beyond the total, whichever address asks', async () => {
      running = await start({ perPeer: 2, total: 4 }, 30_000)
      for (const from of ['127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3']) await silent(from)
      expect(await tlsHandshake(running.port, '127.0.0.4', sni())).to.equal('refused')
    })
  })
