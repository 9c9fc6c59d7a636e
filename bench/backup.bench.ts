/**
 * Pre-upgrade backup: time to save 10,000 custom resources (paged reads, one YAML file each) against
 * FakeApiServer, which runs in a process of its own so that the CLI's CPU is measured apart from the
 * fake's. Beside it `node -e 0` from the same run (machines differ by 2×, DESIGN §6).
 * The backups go under os.tmpdir(): creating 10,000 files is most of the cost on a busy shared
 * disk, so `TMPDIR=/dev/shm` shows the CLI's own cost apart from the disk's (backupRoot says which).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClusterReader } from '../src/lib/upgrade/index.js'
import { backupCustomResources, BACKUP_PAGE_SIZE } from '../src/lib/upgrade/backup.js'
import { startServingChild } from './serving-child.js'
import { nodeBaseline, summarize } from './stats.js'

const CUSTOM_RESOURCES = 10_000
const RUNS = 5
const BASELINE_RUNS = 10
const here = path.dirname(fileURLToPath(import.meta.url))

export default async function backup() {
  const api = await startServingChild<{ kubeconfig: string }>(path.join(here, 'backup-apiserver.ts'), [
    String(CUSTOM_RESOURCES),
  ])
  const wall: number[] = []
  const cliUser: number[] = []
  const cliSystem: number[] = []
  const fakeCpu: number[] = []
  // each run's backup stays until all runs are done: deleting 10,000 files right before the next
  // run (ext4 with discard here) made that run's creates pay for the deletion, up to seconds
  const dirs: string[] = []
  try {
    const reader = await createClusterReader({
      text: api.ready.kubeconfig,
      what: 'the fake API server kubeconfig',
    })
    for (let i = 0; i < RUNS; i++) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-bench-backup-'))
      dirs.push(dir)
      const [cpu0, fake0] = [process.cpuUsage(), await api.cpuMs()]
      const start = process.hrtime.bigint()
      const summary = await backupCustomResources(reader, dir)
      wall.push(Number(process.hrtime.bigint() - start) / 1e6)
      const cpu = process.cpuUsage(cpu0)
      cliUser.push(cpu.user / 1000)
      cliSystem.push(cpu.system / 1000)
      fakeCpu.push((await api.cpuMs()) - fake0)
      if (summary.customResources !== CUSTOM_RESOURCES + 1)
        throw new Error(`backed up ${summary.customResources}`)
    }
  } finally {
    await api.stop()
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  }
  const median = (xs: number[]) => summarize(xs).medianMs
  return {
    customResources: CUSTOM_RESOURCES,
    pageSize: BACKUP_PAGE_SIZE,
    ...summarize(wall),
    targetMedianMs: 3_000,
    backupRoot: os.tmpdir(),
    cliCpuMedianMs: median(cliUser.map((u, i) => u + (cliSystem[i] ?? 0))),
    // the kernel's share (file creation) apart from the CLI's own work
    cliUserCpuMedianMs: median(cliUser),
    cliSystemCpuMedianMs: median(cliSystem),
    fakeApiServerCpuMedianMs: median(fakeCpu),
    nodeBaseline: await nodeBaseline(BASELINE_RUNS),
  }
}
