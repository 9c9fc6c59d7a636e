/**
 * `constellation mini up` wall time, as a user runs it: the CLI process with --json and the real
 * helm 4 on PATH (it installs the releases into the SIMULATED Kubernetes API), default network mode
 * (a network namespace per node as root), for 1 control plane + 2 workers and for 3 + 3; each run
 * is followed by `mini down` (not timed, but it must succeed). Beside it the machine's `node -e 0`,
 * and both environments of env.ts: every node runs several Node processes, each paying the
 * NODE_EXTRA_CA_CERTS start-up cost.
 *
 * Also the resident memory of control-plane-0's join service and key service in a 1 + 2 cluster,
 * idle after the joins. The bootstrapper's memory is not measured here: `bootstrap run` exits once
 * its node is initialized or joined, and bench/init.bench.ts already reports its idle and peak RSS.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { readMiniRecord } from '../src/lib/mini/index.js'
import { miniPaths } from '../src/lib/mini/layout.js'
import { realHelmEnv } from '../test/support/helm.js'
import { ENVIRONMENTS } from './env.js'
import { nodeBaseline, procStatusKiB, summarize, waitUntilIdle } from './stats.js'

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/run.js')
const RUNS = 3
const BASELINE_RUNS = 15
const UP_TIMEOUT_MS = 240_000
const SIZES = [
  { controlPlanes: 1, workers: 2, targetMedianMs: 8_000 },
  { controlPlanes: 3, workers: 3, targetMedianMs: 12_000 },
] as const
const SERVICES = {
  joinService: 'constellation-joinservice.service',
  keyService: 'constellation-keyservice.service',
} as const

interface Result {
  code: number | null
  stdout: string
  stderr: string
}

function run(args: string[], env: NodeJS.ProcessEnv, timeoutMs = UP_TIMEOUT_MS): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...env, CONSTELL_NO_SPINNER: '1' },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

interface UpRun {
  wallMs: number
  /** What `mini up` itself reports (elapsedMs in its JSON). */
  reportedMs: number
  mode: string
  memory?: Record<keyof typeof SERVICES, { rssKiB: number; hwmKiB: number }>
}

/** One `mini up` in a fresh workspace, then `mini down` whatever happened. */
async function upDown(
  ws: string,
  size: (typeof SIZES)[number],
  env: NodeJS.ProcessEnv,
  withMemory: boolean,
): Promise<UpRun> {
  const args = [
    CLI,
    'mini',
    'up',
    '-C',
    ws,
    '--control-planes',
    String(size.controlPlanes),
    '--workers',
    String(size.workers),
    '--json',
  ]
  let outcome: UpRun | undefined
  let failure: unknown
  try {
    const start = process.hrtime.bigint()
    const up = await run(args, env)
    const wallMs = Number(process.hrtime.bigint() - start) / 1e6
    if (up.code !== 0) throw new Error(`mini up exited ${up.code}:\n${up.stderr}`)
    const json = JSON.parse(up.stdout) as { elapsedMs: number; network: { mode: string } }
    outcome = { wallMs, reportedMs: json.elapsedMs, mode: json.network.mode }
    if (withMemory) outcome.memory = await serviceMemory(ws)
  } catch (err) {
    failure = err
  }
  // down whatever happened: a failed or killed up may still have left a record (and processes)
  if (outcome || (await readMiniRecord(ws).catch(() => undefined))) {
    const down = await run([CLI, 'mini', 'down', '-C', ws, '--json'], env, 60_000)
    if (down.code !== 0) {
      const downError = new Error(`mini down exited ${down.code}:\n${down.stderr}`)
      failure = failure ? new AggregateError([failure, downError], 'mini up and mini down failed') : downError
    }
  }
  if (failure !== undefined || !outcome) throw failure
  return outcome
}

/** VmRSS and VmHWM of control-plane-0's join and key services, once they are idle. */
async function serviceMemory(ws: string) {
  const record = await readMiniRecord(ws)
  const cp0 = record?.nodes.find((n) => n.role === 'control-plane' && n.index === 0)
  if (!cp0) throw new Error('mini.json names no control-plane-0')
  const state = miniPaths(ws).node(cp0.name).unitState
  const entries = await Promise.all(
    Object.entries(SERVICES).map(async ([key, unit]) => {
      const pid = Number((await readFile(path.join(state, `${unit}.pid`), 'utf8')).trim())
      await waitUntilIdle(pid)
      return [
        key,
        { rssKiB: await procStatusKiB(pid, 'VmRSS'), hwmKiB: await procStatusKiB(pid, 'VmHWM') },
      ] as const
    }),
  )
  return Object.fromEntries(entries) as Record<keyof typeof SERVICES, { rssKiB: number; hwmKiB: number }>
}

/** The target says MB: 10^6 bytes (/proc reports KiB). */
const mb = (kib: number) => Math.round(((kib * 1024) / 1e6) * 10) / 10

async function measure(dir: string, env: NodeJS.ProcessEnv, label: string, withMemory: boolean) {
  const out: Record<string, unknown> = { nodeBaseline: await nodeBaseline(BASELINE_RUNS, env) }
  for (const size of SIZES) {
    const runs: UpRun[] = []
    for (let i = 0; i < RUNS; i++) {
      const ws = path.join(dir, `${label}-${size.controlPlanes}cp${size.workers}w-${i}`)
      runs.push(await upDown(ws, size, env, withMemory && size.controlPlanes === 1))
    }
    out[`up${size.controlPlanes}cp${size.workers}w`] = {
      controlPlanes: size.controlPlanes,
      workers: size.workers,
      network: [...new Set(runs.map((r) => r.mode))].join(','),
      targetMedianMs: size.targetMedianMs,
      wall: summarize(runs.map((r) => r.wallMs)),
      reportedByMiniUp: summarize(runs.map((r) => r.reportedMs)),
    }
    const measured = runs.flatMap((r) => (r.memory ? [r.memory] : []))
    if (measured.length > 0) {
      const worst = (key: keyof typeof SERVICES, field: 'rssKiB' | 'hwmKiB') =>
        mb(Math.max(...measured.map((m) => m[key][field])))
      out.controlPlane0Memory = {
        cluster: `${size.controlPlanes}cp${size.workers}w`,
        samples: measured.length,
        joinServiceIdleRssMB: worst('joinService', 'rssKiB'),
        joinServicePeakRssMB: worst('joinService', 'hwmKiB'),
        keyServiceIdleRssMB: worst('keyService', 'rssKiB'),
        keyServicePeakRssMB: worst('keyService', 'hwmKiB'),
        targetRssMB: 80,
        note: 'highest over the runs; idle after the joins (VmRSS) and high-water mark (VmHWM); bootstrapper RSS: see init bench',
      }
    }
  }
  return out
}

export default async function mini() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-bench-mini-'))
  try {
    const helm = await realHelmEnv(dir, 4)
    return {
      helm: 'v4.1.4',
      ...(await measure(dir, { ...ENVIRONMENTS.machine, ...helm }, 'machine', true)),
      withoutNodeExtraCaCerts: await measure(
        dir,
        { ...ENVIRONMENTS.withoutNodeExtraCaCerts, ...helm },
        'noca',
        false,
      ),
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
