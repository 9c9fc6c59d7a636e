/**
 * The challenge RPC needs no attestation, so anyone can call it. Real gRPC on loopback: a genuine
 * node (swtpm) holds a challenge while another address calls Issue 20,000 times on its connection,
 * which answers one of them, then the node answers its own. Slow-ish (a few seconds): the 20,000
 * calls are the point.
 */
import * as grpc from '@grpc/grpc-js'
import { createIssuer, createValidator } from '../../src/lib/attestation/index.js'
import {
  ChallengeRegistry,
  listenForAttestedClients,
  openAttestedClientChannel,
  type AttestedClientListener,
} from '../../src/lib/atls/index.js'
import { CHALLENGE_PATH } from '../../src/lib/atls/challenge.js'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { expect } from '../support/chai.js'
import { openRawGrpc } from '../support/raw-peer.js'
import { startSwtpm, type SwtpmHandle } from '../support/swtpm.js'
import { echoOn, EchoService } from './echo-service.js'

const FLOOD_CALLS = 20_000
const STREAMS_AT_ONCE = 500

describe('join direction: a challenge flood from another address (real gRPC)', function () {
  this.timeout(120_000)
  let tpm: SwtpmHandle
  let grpcServer: grpc.Server
  let listener: AttestedClientListener
  beforeEach(async () => {
    tpm = await startSwtpm()
    const pcrs = await readPcrs(tpm.open, [4, 9, 15])
    const challenges = new ChallengeRegistry()
    grpcServer = new grpc.Server()
    grpcServer.addService(EchoService, {
      echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
        cb(null, call.request),
    })
    const measurements = new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]))
    listener = await listenForAttestedClients(
      grpcServer,
      { host: '127.0.0.1', port: 0 },
      { validators: [createValidator('qemu-vtpm', measurements)], challenges },
    )
  })
  afterEach(async () => {
    await listener?.close()
    grpcServer?.forceShutdown()
    await tpm.stop()
  })

  it("a genuine node's outstanding challenge survives 20,000 challenge calls from 127.0.0.2", async () => {
    // the node holds its challenge (it quotes only once the flood is over)
    let floodOver = () => {}
    const over = new Promise<void>((resolve) => (floodOver = resolve))
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    let challenged = () => {}
    const holding = new Promise<void>((resolve) => (challenged = resolve))
    const genuine = openAttestedClientChannel(`127.0.0.1:${listener.port}`, {
      ...issuer,
      issue: async (binding, nonce) => (challenged(), await over, issuer.issue(binding, nonce)),
    })
    await holding
    const flood = await openRawGrpc(listener.port, '127.0.0.2', 'constellation')
    const codes = new Map<number, number>()
    try {
      for (let sent = 0; sent < FLOOD_CALLS; sent += STREAMS_AT_ONCE) {
        const batch = await Promise.all(
          Array.from({ length: STREAMS_AT_ONCE }, () => flood.call(CHALLENGE_PATH, Buffer.alloc(0))),
        )
        for (const r of batch) codes.set(r.code, (codes.get(r.code) ?? 0) + 1)
      }
    } finally {
      await flood.close()
      floodOver()
    }
    // one challenge per connection: the flood got one nonce, and was told why not the others
    expect(codes.get(grpc.status.OK), 'answered with a nonce').to.equal(1)
    expect(codes.get(grpc.status.FAILED_PRECONDITION)).to.equal(FLOOD_CALLS - 1)
    expect((await echoOn(genuine)).toString()).to.equal('secret')
  })
})
