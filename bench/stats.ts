import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
/** Small statistics helpers shared by the benchmarks. */
export function summarize(samplesMs: number[]) {
  const sorted = [...samplesMs].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  const round = (x: number) => Math.round(x * 100) / 100
  return {
    runs: sorted.length,
    medianMs: round(at(0.5)),
    p90Ms: round(at(0.9)),
    p99Ms: round(at(0.99)),
    minMs: round(sorted[0] ?? NaN),
  }
}

export async function timeRuns(runs: number, fn: () => Promise<void>): Promise<number[]> {
  const samples: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint()
    await fn()
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  return samples
}

/** One `node -e 0`: the machine's floor for any process start, the benchmarks' baseline. */
export function nodeE0(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore', env })
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`node -e 0 exited ${code}`))))
  })
}

/** `node -e 0` timed `runs` times in `env`. */
export async function nodeBaseline(runs: number, env: NodeJS.ProcessEnv = process.env) {
  return summarize(await timeRuns(runs, () => nodeE0(env)))
}

/** Until the process used no CPU for two 100 ms samples in a row (at most 10 s), so that work it does right after it starts is neither missing from "idle" nor mixed into a timing. */
export async function waitUntilIdle(pid: number): Promise<void> {
  const cpuTicks = async () => {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
    return Number(fields[11]) + Number(fields[12]) // utime + stime (fields 14 and 15 of stat)
  }
  let last = await cpuTicks()
  for (let quiet = 0, tries = 0; quiet < 2 && tries < 100; tries++) {
    await new Promise((r) => setTimeout(r, 100))
    const now = await cpuTicks()
    quiet = now === last ? quiet + 1 : 0
    last = now
  }
}

/** A memory field of /proc/<pid>/status, in KiB (VmRSS: resident now; VmHWM: the peak). */
export async function procStatusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN)
}
