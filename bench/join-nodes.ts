/**
 * The joining nodes of bench/join.bench.ts, in a process of their own so that the join service's
 * process does only the service's work: `tsx bench/join-nodes.ts ENDPOINT JOINERS SWTPMS` asks for
 * JOINERS tickets at once (each its own key, CSR and disk UUID, attesting from SWTPMS swtpm
 * instances round robin), then, as after a reboot of them all, JOINERS rejoin tickets at once for
 * those disks, and prints one JSON line: latencies, failures, distinct tokens and keys.
 */
import { createIssuer, type Issuer } from '../src/lib/attestation/index.js'
import { attestedJoinTicketRequester, attestedRejoinTicketRequester } from '../src/lib/bootstrapper/index.js'
import { genuineJoinRequest } from '../test/support/join-request.js'
import { benchNodeAddress } from './join-members.js'
import { startSwtpmOnSocket, type SocketSwtpmHandle } from '../test/support/swtpm.js'

/** Runs `ask` for every item at once; each call's latency, or its failure. */
async function atOnce<T>(items: T[], ask: (item: T, i: number) => Promise<void>) {
  const latenciesMs: number[] = []
  const failures: string[] = []
  const start = process.hrtime.bigint()
  await Promise.all(
    items.map(async (item, i) => {
      const began = process.hrtime.bigint()
      try {
        await ask(item, i)
        latenciesMs.push(Number(process.hrtime.bigint() - began) / 1e6)
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err))
      }
    }),
  )
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, latenciesMs, failures }
}

async function joinAtOnce(endpoint: string, joiners: number, issuers: Issuer[]) {
  const requests = await Promise.all(
    Array.from({ length: joiners }, (_, i) => genuineJoinRequest(`bench-${i}`, benchNodeAddress(i))),
  )
  const tokens = new Set<string>()
  const diskKeys = new Set<string>()
  const result = await atOnce(requests, async (request, i) => {
    const ask = attestedJoinTicketRequester(
      issuers[i % issuers.length] as Issuer,
      120_000,
      benchNodeAddress(i),
    )
    const ticket = await ask(endpoint, request, new AbortController().signal)
    tokens.add(ticket.token)
    diskKeys.add(ticket.stateDiskKey.toString('hex'))
  })
  return {
    ...result,
    distinctTokens: tokens.size,
    distinctDiskKeys: diskKeys.size,
    disks: requests.map((r) => r.diskUuid),
  }
}

/** Every joined disk asks for its key again at once, as a cluster whose nodes all rebooted. */
function rejoinAtOnce(endpoint: string, disks: string[], issuers: Issuer[]) {
  return atOnce(disks, async (diskUuid, i) => {
    const ask = attestedRejoinTicketRequester(
      issuers[i % issuers.length] as Issuer,
      120_000,
      benchNodeAddress(i),
    )
    await ask(endpoint, { diskUuid }, new AbortController().signal)
  })
}

const [endpoint = '', joiners = '100', swtpms = '4'] = process.argv.slice(2)
// On unix sockets, as a node's TPM is local (/dev/tpmrm0; mini's swtpm socket): over loopback TCP,
// the kernel's TCP path charged the joiners ~0.2 ms of CPU per TPM command (profile of the joiners).
const tpms: SocketSwtpmHandle[] = []
try {
  for (let i = 0; i < Number(swtpms); i++) tpms.push(await startSwtpmOnSocket())
  const issuers = tpms.map((t) => createIssuer('qemu-vtpm', t.open))
  await joinAtOnce(endpoint, issuers.length, issuers) // warm-up: AKs, encoders, JIT, connections
  const { disks, ...joins } = await joinAtOnce(endpoint, Number(joiners), issuers)
  const rejoins = await rejoinAtOnce(endpoint, disks, issuers)
  process.stdout.write(JSON.stringify({ ...joins, rejoins }) + '\n')
} finally {
  await Promise.all(tpms.map((t) => t.stop()))
}
