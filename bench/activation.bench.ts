/**
 * What tpm-ek's credential activation adds to a server-attested aTLS handshake (init, verify,
 * recover): the same TPM (swtpm manufactured with an EK certificate) serves one RPC over aTLS with
 * qemu-vtpm and with tpm-ek, a new channel per run; the difference is the activation (a second
 * connection, MakeCredential, and the TPM's EK + ActivateCredential). DESIGN target: ≤ 30 ms.
 */
import { X509Certificate } from 'node:crypto'
import * as grpc from '@grpc/grpc-js'
import {
  createIssuer,
  createValidator,
  type Issuer,
  type Measurements,
  type Validator,
} from '../src/lib/attestation/index.js'
import { createTpmEkIssuer, createTpmEkValidator } from '../src/lib/attestation/tpm-ek.js'
import { createAttestedChannelCredentials, createAttestedServerCredentials } from '../src/lib/atls/index.js'
import { callRaw, listenOn, rawUnaryMethod } from '../src/lib/grpc/index.js'
import { readPcrs } from '../src/lib/tpm/index.js'
import { startSwtpm } from '../test/support/swtpm.js'
import { summarize, timeRuns } from './stats.js'

const RUNS = 30
const WARMUP = 3
const PING: grpc.ServiceDefinition = { ping: rawUnaryMethod('/bench.Ping/Ping') }
const PingClient = grpc.makeGenericClientConstructor(PING, 'Ping')

async function handshakes(issuer: Issuer, validator: Validator): Promise<number[]> {
  const server = new grpc.Server()
  server.addService(PING, {
    ping: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
      cb(null, call.request),
  })
  const address = await listenOn(server, '127.0.0.1:0', createAttestedServerCredentials({ issuer }), 'bench')
  try {
    const once = async () => {
      const client = new PingClient(address, createAttestedChannelCredentials({ validators: [validator] }))
      try {
        await callRaw(client, '/bench.Ping/Ping', Buffer.from('x'), 30_000)
      } finally {
        client.close()
      }
    }
    await timeRuns(WARMUP, once)
    return await timeRuns(RUNS, once)
  } finally {
    server.forceShutdown()
  }
}

export default async function activation() {
  const tpm = await startSwtpm({ ekCertificate: true })
  try {
    const pcrs = await readPcrs(tpm.open, [4, 8, 9, 11, 12, 13, 15])
    const measurements: Measurements = new Map(
      [...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]),
    )
    const roots = [new X509Certificate(tpm.ekCa!.intermediate)]
    const qemu = summarize(
      await handshakes(createIssuer('qemu-vtpm', tpm.open), createValidator('qemu-vtpm', measurements)),
    )
    const tpmEk = summarize(
      await handshakes(createTpmEkIssuer(tpm.open), createTpmEkValidator(measurements, roots)),
    )
    return {
      ek: 'ECC P-384 (swtpm certifies RSA 2048 and P-384; the issuer prefers ECC)',
      qemuVtpmHandshake: qemu,
      tpmEkHandshake: tpmEk,
      activationCostMedianMs: Math.round((tpmEk.medianMs - qemu.medianMs) * 100) / 100,
      targetActivationCostMs: 30,
      note: 'new channel per run: TCP + TLS 1.3 + attested cert + quote + verify (+ tpm-ek: chain check, a second connection, MakeCredential, EK + ActivateCredential) + one RPC',
    }
  } finally {
    await tpm.stop()
  }
}
