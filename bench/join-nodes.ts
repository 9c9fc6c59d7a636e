/**
 * The joining nodes of bench/join.bench.ts, in a process of their own so that the join service's
 * process does only the service's work: `tsx bench/join-nodes.ts ENDPOINT JOINERS SWTPMS` asks for
 * JOINERS tickets at once (each its own key, CSR and disk UUID, attesting from SWTPMS swtpm
 * instances round robin) and prints one JSON line: latencies, failures, distinct tokens and keys.
 */
import { randomUUID } from 'node:crypto'
import { createIssuer, type Issuer } from '../src/lib/attestation/index.js'
import { attestedJoinTicketRequester } from '../src/lib/bootstrapper/index.js'
import { createCsr, generateEcdsaP256KeyPair } from '../src/lib/x509/index.js'
import { startSwtpm, type SwtpmHandle } from '../test/support/swtpm.js'

async function joinRequest(name: string) {
  const { privateKey } = await generateEcdsaP256KeyPair()
  return {
    diskUuid: randomUUID(),
    isControlPlane: false,
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
    certificateRequest: createCsr({
      key: privateKey,
      subject: [
        ['CN', `system:node:${name}`],
        ['O', 'system:nodes'],
      ],
      ipSans: ['127.0.0.1'],
      dnsSans: [name],
    }),
  }
}

async function joinAtOnce(endpoint: string, joiners: number, issuers: Issuer[]) {
  const requests = await Promise.all(Array.from({ length: joiners }, (_, i) => joinRequest(`bench-${i}`)))
  const latenciesMs: number[] = []
  const failures: string[] = []
  const tokens = new Set<string>()
  const diskKeys = new Set<string>()
  const start = process.hrtime.bigint()
  await Promise.all(
    requests.map(async (request, i) => {
      const began = process.hrtime.bigint()
      try {
        const ask = attestedJoinTicketRequester(issuers[i % issuers.length] as Issuer, 120_000)
        const ticket = await ask(endpoint, request, new AbortController().signal)
        tokens.add(ticket.token)
        diskKeys.add(ticket.stateDiskKey.toString('hex'))
        latenciesMs.push(Number(process.hrtime.bigint() - began) / 1e6)
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err))
      }
    }),
  )
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  return { seconds, latenciesMs, failures, distinctTokens: tokens.size, distinctDiskKeys: diskKeys.size }
}

const [endpoint = '', joiners = '100', swtpms = '4'] = process.argv.slice(2)
const tpms: SwtpmHandle[] = []
try {
  for (let i = 0; i < Number(swtpms); i++) tpms.push(await startSwtpm())
  const issuers = tpms.map((t) => createIssuer('qemu-vtpm', t.open))
  await joinAtOnce(endpoint, issuers.length, issuers) // warm-up: AKs, encoders, JIT, connections
  process.stdout.write(JSON.stringify(await joinAtOnce(endpoint, Number(joiners), issuers)) + '\n')
} finally {
  await Promise.all(tpms.map((t) => t.stop()))
}
