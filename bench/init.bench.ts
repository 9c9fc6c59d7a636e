/**
 * Init overhead on loopback: `constellation init` process start → kubeconfig written, against a real
 * `bootstrap run` process with swtpm, cryptsetup on an image file and the kubeadm contract fake.
 * The node's init secret hash has the cost `config init-secret-hash` writes. Also the bootstrapper's
 * resident memory, idle and peak. The fake's own time (four node processes that generate RSA keys)
 * is reported apart, from the durations the bootstrapper logs for each run. Both environments of
 * env.ts: the machine's, and without NODE_EXTRA_CA_CERTS. These runs pass --skip-helm: the target
 * ends at the kubeconfig. Then init with the release bring-up: the real helm 4 installs the three
 * fixture charts into the API contract fake, which the kubeadm fake names in admin.conf.
 */
import { spawn } from 'node:child_process'
import { stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { workspacePaths } from '../src/lib/paths.js'
import { FakeApiServer } from '../src/lib/simulator/index.js'
import { realHelmEnv } from '../test/support/helm.js'
import { overrideChartsWithFixtures } from '../test/support/upgrade-workspace.js'
import { stringifyYaml } from '../src/lib/yaml/index.js'
import { setClusterEndpoint, startLocalNode } from '../test/support/local-node.js'
import { freePort, waitForPort } from '../test/support/ports.js'
import { ENVIRONMENTS } from './env.js'
import { procStatusKiB, summarize, waitUntilIdle } from './stats.js'

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/run.js')
const RUNS = 7

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...env, CONSTELL_NO_SPINNER: '1' },
    })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stderr }))
  })
}

async function oneRun(env: NodeJS.ProcessEnv, opts: { bringUp?: boolean } = {}) {
  const node = await startLocalNode()
  const api = opts.bringUp ? await new FakeApiServer().start() : undefined
  try {
    const initArgs = ['init', '-C', node.workspace, ...(api ? [] : ['--skip-helm'])]
    if (api) {
      const adminConf = path.join(node.dir, 'api-admin.conf')
      await writeFile(adminConf, api.kubeconfig(), { mode: 0o600 })
      await overrideChartsWithFixtures(node.workspace, {
        cilium: '1.0.0',
        coredns: '1.0.0',
        'cert-manager': '1.0.0',
      })
      env = { ...env, ...(await realHelmEnv(node.dir, 4)), KUBEADM_FAKE_ADMIN_KUBECONFIG: adminConf }
    }
    const port = await freePort()
    const nodeConfig = node.configFile
    await writeFile(nodeConfig, stringifyYaml(node.nodeConfig(`127.0.0.1:${port}`)))
    // the node's systemd (FakeSystemctl): after init, bootstrap run starts the key and join services
    const daemon = spawn(process.execPath, [CLI, 'bootstrap', 'run', '--config', nodeConfig], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...env, ...node.systemd.env },
    })
    let log = ''
    daemon.stderr.on('data', (d: Buffer) => (log += d.toString()))
    const exited = new Promise<void>((r) => daemon.on('close', () => r()))
    await waitForPort(port)
    await waitUntilIdle(daemon.pid ?? 0)
    const idleRssKiB = await procStatusKiB(daemon.pid ?? 0, 'VmRSS')
    const peak = watchPeakRss(daemon.pid ?? 0)
    await setClusterEndpoint(node.workspace, `127.0.0.1:${port}`)
    const startedAt = Date.now()
    const start = process.hrtime.bigint()
    const res = await runCli(initArgs, env)
    const toExitMs = Number(process.hrtime.bigint() - start) / 1e6
    if (res.code !== 0) throw new Error(`init failed: ${res.stderr}`)
    // The target's end point: the admin kubeconfig's last write (wall clock, as is startedAt).
    const totalMs = (await stat(workspacePaths(node.workspace).adminConf)).mtimeMs - startedAt
    await exited
    const peakRssKiB = peak.stop()
    const kubeadmMs = kubeadmSpan(log)
    return { totalMs, toExitMs, kubeadmMs, peakRssKiB, idleRssKiB }
  } finally {
    await api?.stop()
    await node.stop()
  }
}

/** The kubeadm fake's own time: the four kubeadm runs the bootstrapper logs with their duration. */
function kubeadmSpan(log: string): number {
  const runs = log
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string; durationMs?: number })
    .filter((l) => l.msg === 'kubeadm finished')
  return runs.length === 4 ? runs.reduce((sum, l) => sum + (l.durationMs ?? NaN), 0) : NaN
}

/**
 * The daemon exits right after init, and /proc has no VmHWM for an exited process: sample the
 * high-water mark every 10 ms while it runs and keep the highest reading.
 */
function watchPeakRss(pid: number): { stop(): number } {
  let peakKiB = NaN
  const sample = () =>
    void procStatusKiB(pid, 'VmHWM').then(
      (kib) => {
        if (Number.isFinite(kib)) peakKiB = Number.isNaN(peakKiB) ? kib : Math.max(peakKiB, kib)
      },
      () => {},
    )
  sample()
  const timer = setInterval(sample, 10)
  return {
    stop: () => {
      clearInterval(timer)
      return peakKiB
    },
  }
}

async function measure(env: NodeJS.ProcessEnv) {
  const runs = []
  for (let i = 0; i < RUNS; i++) runs.push(await oneRun(env))
  // The target says MB: 10^6 bytes (/proc reports KiB).
  const peakMB = (Math.max(...runs.map((r) => r.peakRssKiB)) * 1024) / 1e6
  const idleMB = (Math.max(...runs.map((r) => r.idleRssKiB)) * 1024) / 1e6
  return {
    cliStartToKubeconfig: summarize(runs.map((r) => r.totalMs)),
    kubeadmFakeShare: summarize(runs.map((r) => r.kubeadmMs)),
    initOverheadWithoutKubeadmFake: summarize(runs.map((r) => r.totalMs - r.kubeadmMs)),
    initOverheadToCliExit: summarize(runs.map((r) => r.toExitMs - r.kubeadmMs)),
    bootstrapperIdleRssMB: Math.round(idleMB * 10) / 10,
    bootstrapperPeakRssMB: Math.round(peakMB * 10) / 10,
  }
}

/** init with the bring-up of three releases, each `helm upgrade --install --wait` of its own. */
async function measureBringUp(env: NodeJS.ProcessEnv) {
  const runs = []
  for (let i = 0; i < 3; i++) runs.push(await oneRun(env, { bringUp: true }))
  return {
    helm: 'v4.1.4',
    releases: 3,
    cliStartToExit: summarize(runs.map((r) => r.toExitMs)),
    kubeconfigToExit: summarize(runs.map((r) => r.toExitMs - r.totalMs)),
  }
}

export default async function init() {
  return {
    targetInitOverheadRatioToNode: 2.5,
    targetBootstrapperRssMB: 80,
    ...(await measure(ENVIRONMENTS.machine)),
    withoutNodeExtraCaCerts: await measure(ENVIRONMENTS.withoutNodeExtraCaCerts),
    withReleaseBringUp: await measureBringUp(ENVIRONMENTS.machine),
  }
}
