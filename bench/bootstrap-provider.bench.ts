/**
 * bootstrap-data controller: time from start until every KubeadmConfig of a 1 + 49 machine cluster
 * has its data Secret and ready status, against two API contract fakes (management, workload). The
 * CA Secrets exist beforehand (RSA generation is measured in the bootstrapdata bench), so this is
 * the reconcile loop, rendering, token registration and status writes.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createBootstrapProvider } from '../src/wiring/bootstrap-provider.js'
import { loadOrCreateCaSecrets } from '../src/lib/bootstrapdata/ca-secrets.js'
import { openKubeApi } from '../src/lib/kube/index.js'
import { silentLogger } from '../src/lib/system/logger.js'
import { startFakeApiServer } from '../src/lib/simulator/fake-apiserver.js'
import { makeTempDir } from '../test/support/temp.js'
import {
  BOOTSTRAP,
  CLUSTER,
  CLUSTER_MACHINES,
  installCapiCrds,
  NS,
  seedCluster,
  setClusterStatus,
} from '../test/support/capi-objects.js'
import { summarize } from './stats.js'

const WORKERS = 49
const RUNS = 3

export default async function bootstrapProvider() {
  const samples: number[] = []
  for (let run = 0; run < RUNS; run++) samples.push(await once())
  const ms = summarize(samples)
  return {
    machines: WORKERS + 1,
    toAllReadyMs: ms,
    configsPerSecond: Math.round(((WORKERS + 1) * 1000) / ms.medianMs),
  }
}

async function once(): Promise<number> {
  const [management, workload, temp] = await Promise.all([
    startFakeApiServer(),
    startFakeApiServer(),
    makeTempDir('constell-bench-provider-'),
  ])
  try {
    installCapiCrds(management)
    const [cp, , worker] = CLUSTER_MACHINES as [
      (typeof CLUSTER_MACHINES)[0],
      unknown,
      (typeof CLUSTER_MACHINES)[0],
    ]
    const machines = [cp, ...Array.from({ length: WORKERS }, (_, i) => ({ ...worker, name: `worker-${i}` }))]
    seedCluster(management, workload.kubeconfig(), machines)
    setClusterStatus(management, {
      infrastructureReady: true,
      conditions: [{ type: 'ControlPlaneInitialized', status: 'True' }],
    })
    const kubeconfig = path.join(temp.dir, 'management.kubeconfig')
    await writeFile(kubeconfig, management.kubeconfig(), { mode: 0o600 })
    await loadOrCreateCaSecrets(await openKubeApi(kubeconfig), {
      namespace: NS,
      cluster: CLUSTER,
      generate: true,
      now: new Date(),
    })
    const start = process.hrtime.bigint()
    const controller = await createBootstrapProvider(
      {
        kubeconfig,
        apiVersion: 'v1beta1',
        tokenTtlMs: 15 * 60_000,
        resyncMs: 30_000,
        renewMs: 5_000,
        leaseDurationMs: 15_000,
        leaseNamespace: NS,
        leaseName: 'bench',
      },
      silentLogger,
    )
    await controller.start()
    const ready = () =>
      management
        .list(BOOTSTRAP, 'kubeadmconfigs', NS)
        .every((c) => (c.status as { ready?: boolean } | undefined)?.ready)
    while (!ready()) await new Promise((r) => setTimeout(r, 5))
    const elapsed = Number(process.hrtime.bigint() - start) / 1e6
    await controller.stop()
    return elapsed
  } finally {
    await Promise.all([management.stop(), workload.stop()])
    await temp.cleanup()
  }
}
