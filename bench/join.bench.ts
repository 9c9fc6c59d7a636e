/**
 * Attested joins per second at one join service: 100 and then 500 joiners at once (bench/join-nodes.ts,
 * a child process), each with its own key, CSR and disk UUID, attesting from swtpm over the
 * join-direction aTLS (one connection per join); the service asks a real key service over gRPC, which runs in a process of
 * its own as on a control plane (bench/key-service-process.ts), so that the CPU of each service is
 * measured apart. The one double is the token registrar (BENCH DOUBLE: the Kubernetes API, which
 * cannot run here), kept in memory. The nodes share the machine's two cores with the services, so
 * the rate is a floor for the services alone.
 */
import { InMemoryStateDisks } from '../test/support/state-disks.js'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createValidator, type Measurements } from '../src/lib/attestation/index.js'
import {
  createJoinService,
  createKubeletSigner,
  staticMembers,
  validatorSourceFrom,
} from '../src/lib/joinservice/index.js'
import { type JoinService } from '../src/lib/joinservice/server.js'
import { KeyServiceClient } from '../src/lib/kms/index.js'
import { createTokenIssuer, type SecretObject } from '../src/lib/kube/index.js'
import { type TokenRegistrar } from '../src/lib/kube/bootstrap-token.js'
import { silentLogger } from '../src/lib/system/logger.js'
import { readPcrs } from '../src/lib/tpm/index.js'
import { COMPONENTS, makeClusterCa, MEASUREMENT_SALT } from '../test/joinservice/fakes.js'
import { startSwtpm, type SwtpmHandle } from '../test/support/swtpm.js'
import { benchMembers } from './join-members.js'
import { startServingChild, type ServingChild } from './serving-child.js'
import { summarize } from './stats.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const SWTPMS = 4
const ROUNDS = [100, 500]
const ENFORCED_PCRS = [4, 8, 9, 11, 12, 13, 15]

/** BENCH DOUBLE: the Kubernetes API's Secrets, in memory. */
class InMemoryTokenRegistrar implements TokenRegistrar {
  readonly names = new Set<string>()
  register(secret: SecretObject): Promise<void> {
    this.names.add(secret.metadata.name)
    return Promise.resolve()
  }
}

/** One round in a child process (bench/join-nodes.ts): the nodes' work stays off the service's thread. */
async function round(endpoint: string, joiners: number, keyService: ServingChild<unknown>) {
  const child = spawn(
    process.execPath,
    // the parent's Node flags (`--import tsx`, and `--cpu-prof` when profiling: both processes then)
    [...process.execArgv, path.join(HERE, 'join-nodes.ts'), endpoint, String(joiners), String(SWTPMS)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  const cpuBefore = process.cpuUsage() // this process runs only the join service
  const keyCpuBefore = await keyService.cpuMs()
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  const cpu = process.cpuUsage(cpuBefore)
  const keyServiceCpuMs = (await keyService.cpuMs()) - keyCpuBefore
  if (code !== 0) throw new Error(`bench/join-nodes.ts exited ${code}`)
  const r = JSON.parse(out) as {
    seconds: number
    latenciesMs: number[]
    failures: string[]
    distinctTokens: number
    distinctDiskKeys: number
    rejoins: { seconds: number; latenciesMs: number[]; failures: string[] }
  }
  const { medianMs, p90Ms, p99Ms } = summarize(r.latenciesMs)
  // the services' CPU over the whole child run (warm-up joins, joins and rejoins, counted alike): an upper bound per request
  const requests = 2 * joiners + SWTPMS
  const serviceCpuMsPerJoin = (cpu.user + cpu.system) / 1000 / requests
  const keyServiceCpuMsPerJoin = keyServiceCpuMs / requests
  const rejoin = summarize(r.rejoins.latenciesMs)
  return {
    joiners,
    joinsPerSecond: Math.round((r.latenciesMs.length / r.seconds) * 10) / 10,
    p50Ms: medianMs,
    p90Ms,
    p99Ms,
    failures: r.failures.length,
    firstFailure: r.failures[0],
    distinctTokens: r.distinctTokens,
    distinctDiskKeys: r.distinctDiskKeys,
    serviceCpuMsPerJoin: Math.round(serviceCpuMsPerJoin * 100) / 100,
    serviceJoinsPerCpuSecond: Math.round(1000 / serviceCpuMsPerJoin),
    // /proc counts in 10 ms ticks: over ≥ 200 requests, ±0.05 ms per request
    keyServiceCpuMsPerJoin: Math.round(keyServiceCpuMsPerJoin * 100) / 100,
    joinAndKeyServiceCpuMsPerJoin: Math.round((serviceCpuMsPerJoin + keyServiceCpuMsPerJoin) * 100) / 100,
    rejoinsPerSecond: Math.round((r.rejoins.latenciesMs.length / r.rejoins.seconds) * 10) / 10,
    rejoinP50Ms: rejoin.medianMs,
    rejoinP99Ms: rejoin.p99Ms,
    rejoinFailures: r.rejoins.failures.length,
    firstRejoinFailure: r.rejoins.failures[0],
  }
}

export default async function join() {
  const tpms: SwtpmHandle[] = []
  let service: JoinService | undefined
  const keyService = await startServingChild<{ address: string }>(path.join(HERE, 'key-service-process.ts'))
  const keys = new KeyServiceClient(keyService.ready.address)
  try {
    // the nodes' swtpms start fresh, so any fresh swtpm shows the PCR values they will report
    tpms.push(await startSwtpm())
    const pcrs = await readPcrs(tpms[0]?.open ?? (() => Promise.reject(new Error('no swtpm'))), ENFORCED_PCRS)
    const measurements: Measurements = new Map(
      [...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }]),
    )
    const ca = await makeClusterCa()
    const registrar = new InMemoryTokenRegistrar()
    service = createJoinService({
      listen: '127.0.0.1:0',
      validatorSource: validatorSourceFrom({ current: () => measurements }, (m) =>
        createValidator('qemu-vtpm', m),
      ),
      keyService: (wanted) => keys.getDataKeys(wanted),
      tokens: createTokenIssuer(registrar, () => new Date()),
      kubeletSigner: createKubeletSigner({ ...ca, clock: () => new Date() }),
      ca,
      controlPlaneServiceFiles: () => Promise.resolve([]),
      kubernetes: () => Promise.resolve({ version: 'v1.31.13', components: COMPONENTS }),
      stateDisks: new InMemoryStateDisks(),
      cluster: { measurementSalt: MEASUREMENT_SALT, apiServerEndpoint: '127.0.0.1:6443' },
      members: staticMembers(benchMembers(Math.max(...ROUNDS))),
      clock: () => new Date(),
      logger: silentLogger,
      // every joiner sits on 127.0.0.1, one address for 500 nodes: lift the per-address cap
      limits: { connections: { perPeer: 4_096, total: 4_096 } },
    })
    const endpoint = await service.start()
    const results = []
    for (const joiners of ROUNDS) results.push(await round(endpoint, joiners, keyService))
    return {
      rounds: results,
      swtpms: SWTPMS,
      targetJoinsPerSecond: 100,
      note: 'joiners in a child process, the key service in another, on the same 2 cores; serviceCpuMsPerJoin is the join service process alone; each join = one TLS 1.3 connection: Issue + client quote + Attest + CSR check and signing + one key-service RPC for the disk key and measurement secret (GetDataKeys) + token + disk record; then every node rejoins at once (Issue + quote + Attest + disk lookup + one key-service RPC)',
    }
  } finally {
    await service?.stop(1_000)
    keys.close()
    await keyService.stop()
    await Promise.all(tpms.map((t) => t.stop()))
  }
}
