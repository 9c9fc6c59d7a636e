/** Attestation on swtpm: quote issue, quote verify, issue+verify, and a full aTLS handshake + RPC (medians). */
import { randomBytes } from 'node:crypto'
import { createIssuer, createValidator, type Measurements } from '../src/lib/attestation/index.js'
import { parseNodeConfig } from '../src/lib/nodeconfig/node-config.js'
import { readPcrs } from '../src/lib/tpm/index.js'
import { verifyNode } from '../src/lib/verify/index.js'
import { createVerifyService } from '../src/wiring/verify-service.js'
import { freePort } from '../test/support/ports.js'
import { startSwtpm } from '../test/support/swtpm.js'
import { summarize, timeRuns } from './stats.js'
import { silentLogger } from '../src/lib/system/logger.js'

const RUNS = 50
const WARMUP = 3

export default async function attestation() {
  const tpm = await startSwtpm()
  try {
    const pcrs = await readPcrs(tpm.open, [4, 8, 9, 11, 12, 13, 15])
    const measurements: Measurements = new Map(
      [...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]),
    )
    const issuer = createIssuer('qemu-vtpm', tpm.open)
    const validator = createValidator('qemu-vtpm', measurements)
    const userData = randomBytes(32)
    const nonce = randomBytes(32)
    const doc = await issuer.issue(userData, nonce)
    const issue = await timeRuns(RUNS, async () => void (await issuer.issue(userData, nonce)))
    const verify = await timeRuns(RUNS, async () => void (await validator.validate(doc, nonce)))
    const both = await timeRuns(RUNS, async () => {
      const n = randomBytes(32)
      await validator.validate(await issuer.issue(userData, n), n)
    })

    const port = await freePort()
    const config = parseNodeConfig(
      `attestationVariant: qemu-vtpm\ntpm: {swtpm: "${tpm.endpoint}"}\nverifyService: {listen: "127.0.0.1:${port}"}\n`,
      'bench node config',
    )
    const daemon = createVerifyService(config, silentLogger)
    const endpoint = await daemon.start()
    try {
      const handshake = async () => {
        const { error } = await verifyNode({ endpoint, variant: 'qemu-vtpm', measurements })
        if (error) throw error
      }
      await timeRuns(WARMUP, handshake)
      const handshakes = await timeRuns(RUNS, handshake)
      return {
        quoteIssue: summarize(issue),
        quoteVerify: summarize(verify),
        quoteIssueAndVerify: { ...summarize(both), targetMedianMs: 50 },
        atlsHandshakeWithAttestation: {
          ...summarize(handshakes),
          targetMedianMs: 60,
          note: 'new channel per run: TCP + TLS 1.3 + attested cert + quote + verify + one RPC',
        },
      }
    } finally {
      await daemon.stop()
    }
  } finally {
    await tpm.stop()
  }
}
