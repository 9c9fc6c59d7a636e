/**
 * Pre-upgrade backup: time to save 10,000 custom resources (paged reads, one YAML file each) against
 * FakeApiServer, which runs in a process of its own so that the CLI's CPU is measured apart from the
 * fake's. Beside it `node -e 0` from the same run (machines differ by 2×, DESIGN §6).
 * The backups go under os.tmpdir(): creating 10,000 files is most of the cost on a busy shared
 * disk, so `TMPDIR=/dev/shm` shows the CLI's own cost apart from the disk's (backupRoot says which).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { createClusterReader } from '../src/lib/upgrade/index.js'
import { backupCustomResources, BACKUP_PAGE_SIZE } from '../src/lib/upgrade/backup.js'
import { nodeBaseline, summarize } from './stats.js'

const CUSTOM_RESOURCES = 10_000
const RUNS = 5
const BASELINE_RUNS = 10
const here = path.dirname(fileURLToPath(import.meta.url))

/** CPU time (user + system) the process `pid` has used, in ms. */
async function cpuMsOf(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // utime + stime, in USER_HZ (100)
}

const ownCpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** The fake in its own process; resolves once it is seeded and serving. */
async function startApiServerProcess() {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(here, 'backup-apiserver.ts'), String(CUSTOM_RESOURCES)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const line = await new Promise<string>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`the fake API server exited ${code}`)))
    createInterface({ input: child.stdout }).once('line', resolve)
  })
  const { kubeconfig } = JSON.parse(line) as { kubeconfig: string }
  const pid = child.pid ?? NaN
  return {
    kubeconfig,
    cpuMs: () => cpuMsOf(pid),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve())
        child.stdin.end()
      }),
  }
}

export default async function backup() {
  const api = await startApiServerProcess()
  const wall: number[] = []
  const cliCpu: number[] = []
  const fakeCpu: number[] = []
  try {
    const reader = await createClusterReader({ text: api.kubeconfig, what: 'the fake API server kubeconfig' })
    for (let i = 0; i < RUNS; i++) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-bench-backup-'))
      try {
        const [cpu0, fake0] = [ownCpuMs(), await api.cpuMs()]
        const start = process.hrtime.bigint()
        const summary = await backupCustomResources(reader, dir)
        wall.push(Number(process.hrtime.bigint() - start) / 1e6)
        cliCpu.push(ownCpuMs() - cpu0)
        fakeCpu.push((await api.cpuMs()) - fake0)
        if (summary.customResources !== CUSTOM_RESOURCES + 1)
          throw new Error(`backed up ${summary.customResources}`)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }
  } finally {
    await api.stop()
  }
  const median = (xs: number[]) => summarize(xs).medianMs
  return {
    customResources: CUSTOM_RESOURCES,
    pageSize: BACKUP_PAGE_SIZE,
    ...summarize(wall),
    targetMedianMs: 3_000,
    backupRoot: os.tmpdir(),
    cliCpuMedianMs: median(cliCpu),
    fakeApiServerCpuMedianMs: median(fakeCpu),
    nodeBaseline: await nodeBaseline(BASELINE_RUNS),
  }
}
