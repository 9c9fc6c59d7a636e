import * as grpc from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { createValidator } from '../../src/lib/attestation/index.js'
import { createAttestedChannelCredentials } from '../../src/lib/atls/index.js'
import { startSilentPeer, type SilentPeer } from '../support/silent-peer.js'

describe('aTLS client against a peer that accepts and never speaks', function () {
  this.timeout(30_000)
  let peer: SilentPeer
  beforeEach(async () => (peer = await startSilentPeer()))
  afterEach(() => peer.stop())

  it('gives up after handshakeTimeoutMs, destroys its socket, and the call fails UNAVAILABLE', async () => {
    const creds = createAttestedChannelCredentials({
      validators: [createValidator('qemu-vtpm', new Map())],
      handshakeTimeoutMs: 200,
    })
    const client = new grpc.Client(`127.0.0.1:${peer.port}`, creds)
    try {
      const err = await new Promise<grpc.ServiceError>((resolve) =>
        client.makeUnaryRequest(
          '/x.Y/Z',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          // far beyond the handshake bound: only the handshake timeout can end this call early
          { deadline: Date.now() + 10 * 60_000 },
          (e) => resolve(e as grpc.ServiceError),
        ),
      )
      expect(err.code).to.equal(grpc.status.UNAVAILABLE)
      expect(err.details).to.match(/no TLS handshake from 127\.0\.0\.1:\d+ within 200 ms/)
    } finally {
      client.close()
    }
    await peer.firstClosed // the client closed its end; before the fix it stayed open forever
  })
})
