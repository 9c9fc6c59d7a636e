/** Pre-upgrade backup: time to save 10,000 custom resources (paged reads, one YAML file each) against FakeApiServer. */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createClusterReader } from '../src/lib/upgrade/index.js'
import { startFakeApiServer } from '../src/lib/simulator/fake-apiserver.js'
import { seedCustomResources } from '../test/support/upgrade-workspace.js'
import { summarize } from './stats.js'
import { backupCustomResources, BACKUP_PAGE_SIZE } from '../src/lib/upgrade/backup.js'

const CUSTOM_RESOURCES = 10_000
const RUNS = 5

export default async function backup() {
  const api = await startFakeApiServer()
  const samples: number[] = []
  try {
    seedCustomResources(api, CUSTOM_RESOURCES)
    const kc = { text: api.kubeconfig(), what: 'the fake API server kubeconfig' }
    const reader = await createClusterReader(kc)
    for (let i = 0; i < RUNS; i++) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-bench-backup-'))
      try {
        const start = process.hrtime.bigint()
        const summary = await backupCustomResources(reader, dir)
        samples.push(Number(process.hrtime.bigint() - start) / 1e6)
        if (summary.customResources !== CUSTOM_RESOURCES + 1)
          throw new Error(`backed up ${summary.customResources}`)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }
  } finally {
    await api.stop()
  }
  return {
    customResources: CUSTOM_RESOURCES,
    pageSize: BACKUP_PAGE_SIZE,
    ...summarize(samples),
    targetMedianMs: 10_000,
  }
}
