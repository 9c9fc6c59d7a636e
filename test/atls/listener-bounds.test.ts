/**
 * What an unauthenticated peer can cost the join listener (listenForAttestedClients, its own Node
 * TLS server): a socket that never speaks is closed after the handshake timeout, and one address
 * holds at most its cap of connections while others still connect. Peers are loopback addresses.
 */
import * as grpc from '@grpc/grpc-js'
import { connect as tlsConnect } from 'node:tls'
import {
  ChallengeRegistry,
  listenForAttestedClients,
  type AttestedClientListener,
} from '../../src/lib/atls/index.js'
import { createUnattestedServerCredentials } from '../../src/lib/atls/channel-credentials.js'
import { boundedServerOptions, type ConnectionLimits } from '../../src/lib/grpc/index.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { createFakeAttestation } from '../support/fake-attestation.js'
import { connectSilently, connectTlsSilently, tlsHandshake, type SilentSocket } from '../support/raw-peer.js'
import { echo, EchoService } from './echo-service.js'

describe('join listener: handshake timeout and per-peer connection caps', function () {
  this.timeout(20_000)
  let grpcServer: grpc.Server | undefined
  let listener: AttestedClientListener | undefined
  let sockets: SilentSocket[]
  beforeEach(() => (sockets = []))
  afterEach(async () => {
    for (const s of sockets) s.socket.destroy()
    await listener?.close()
    listener = undefined
    grpcServer?.forceShutdown()
  })

  /** As the join service serves: its gRPC server built with the limits' idle timeout. */
  async function listen(limits: ConnectionLimits, handshakeTimeoutMs: number): Promise<number> {
    grpcServer = new grpc.Server(boundedServerOptions(limits))
    grpcServer.addService(EchoService, {
      echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
        cb(null, call.request),
    })
    const challenges = new ChallengeRegistry()
    listener = await listenForAttestedClients(
      grpcServer,
      { host: '127.0.0.1', port: 0 },
      { validators: [createFakeAttestation().validator()], challenges, limits, handshakeTimeoutMs },
    )
    return listener.port
  }
  const silent = async (port: number, from: string) => {
    const s = await connectSilently(port, from)
    sockets.push(s)
    return s
  }

  it('closes a connection that never starts its TLS handshake once the handshake timeout passed', async () => {
    const port = await listen({}, 200)
    const quiet = await silent(port, '127.0.0.2')
    await quiet.closed // before: held open (no timeout at all behind a tlsClientError listener)
  })

  it('closes a connection that opened no call once the idle timeout passed', async () => {
    const port = await listen({ idleTimeoutMs: 200 }, 30_000)
    const idle = await connectTlsSilently(port, '127.0.0.2', 'constellation')
    sockets.push(idle)
    await idle.closed
  })

  it('close ends a connection still in its TLS handshake', async () => {
    const port = await listen({}, 30_000)
    const quiet = await silent(port, '127.0.0.2')
    await listener?.close()
    listener = undefined
    await quiet.closed // before: close waited for it until its handshake timeout
  })

  it("refuses an address's connection beyond its cap while another address still connects", async () => {
    const port = await listen({ perPeer: 3 }, 30_000)
    for (let i = 0; i < 3; i++) await silent(port, '127.0.0.2')
    expect(await tlsHandshake(port, '127.0.0.2', 'constellation'), 'the 4th from 127.0.0.2').to.equal(
      'refused',
    )
    expect(await tlsHandshake(port, '127.0.0.3', 'constellation'), 'from 127.0.0.3').to.equal('connected')
    sockets.pop()?.socket.destroy()
    await eventually('a slot freed for 127.0.0.2', async () =>
      (await tlsHandshake(port, '127.0.0.2', 'constellation')) === 'connected' ? true : undefined,
    )
  })

  it('refuses beyond the total, whichever address asks', async () => {
    const port = await listen({ perPeer: 2, total: 4 }, 30_000)
    for (const from of ['127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3']) await silent(port, from)
    expect(await tlsHandshake(port, '127.0.0.4', 'constellation')).to.equal('refused')
  })

  it('a client without attestation still gets a clear UNAUTHENTICATED', async () => {
    const port = await listen({ perPeer: 3 }, 1_000)
    const err = await echo(port, createUnattestedServerCredentials()).catch((e: unknown) => e)
    expect((err as grpc.ServiceError).code).to.equal(grpc.status.UNAUTHENTICATED)
    expect((err as grpc.ServiceError).details).to.match(
      /attestation refused: this connection has not attested/,
    )
  })

  it('refuses TLS 1.2, where the session binding would not be unique to the session', async () => {
    const port = await listen({}, 1_000)
    const outcome = (maxVersion: 'TLSv1.2' | 'TLSv1.3') =>
      new Promise<string>((resolve) => {
        const tls = tlsConnect({ host: '127.0.0.1', port, maxVersion, rejectUnauthorized: false, ca: [] })
        tls.once('secureConnect', () => (resolve(String(tls.getProtocol())), tls.destroy()))
        tls.once('error', (err) => resolve(err.message))
      })
    expect(await outcome('TLSv1.2')).to.match(/protocol version|unsupported protocol/i)
    expect(await outcome('TLSv1.3')).to.equal('TLSv1.3')
  })
})
