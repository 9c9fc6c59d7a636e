/**
 * Shared setup of the lib-level upgrade tests: the FakeApiServer TEST DOUBLE as the cluster, a
 * workspace whose releases are the fixture charts, and helm: the real helm 3 or 4 (installed
 * releases are installed by it, into the API fake), or the helm contract fake for what no API
 * can make a real helm do (hang, crash, print garbage, be too old).
 */
import { access, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { createRunner, type Runner } from '../../src/lib/system/index.js'
import type { KubeconfigSource } from '../../src/lib/kube/index.js'
import {
  createClusterReader,
  executeUpgrade,
  prepareUpgrade,
  type ExecuteDeps,
  type UpgradeReport,
} from '../../src/lib/upgrade/index.js'
import { Helm, type HelmBounds, type InstalledRelease } from '../../src/lib/helm/binary/helm.js'
import { parseHelmTimeout } from '../../src/lib/helm/binary/timeout.js'
import { makeTempDir } from '../support/temp.js'
import { type FakeApiServer } from '../../src/lib/simulator/index.js'
import { startFakeApiServer } from '../../src/lib/simulator/fake-apiserver.js'
import {
  fakeHelmEnv,
  readFakeHelmState,
  realHelmEnv,
  seedReleases,
  type FakeHelmEnv,
  type HelmMajor,
} from '../support/helm.js'
import {
  installFixtureReleases,
  makeUpgradeWorkspace,
  RELEASE_NAMESPACES,
  seedCustomResources,
} from '../support/upgrade-workspace.js'

export const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  )

export const outcomes = (r: UpgradeReport) => Object.fromEntries(r.releases.map((x) => [x.name, x.outcome]))
export const all = (v: string) => ({ cilium: v, coredns: v, 'cert-manager': v })

export interface SetupOptions {
  installed: Record<string, string>
  targets: Record<string, string>
  /** The real helm of that major (default), or the contract fake. */
  helm?: HelmMajor | 'fake'
  /** Fake only: FAKE_HELM_FAIL, and the version it claims. */
  fail?: string
  helmVersion?: string
}

export interface UpgradeOptions {
  force?: boolean
  dryRun?: boolean
  yes?: boolean
  deps?: Partial<ExecuteDeps>
  /** Added to helm's environment (the fake's FAKE_HELM_HANG, FAKE_HELM_GARBAGE, …). */
  env?: NodeJS.ProcessEnv
  helmBounds?: Partial<HelmBounds>
  /** As the flag takes it. */
  helmTimeout?: string
  /** Runs helm (a spy around the real runner, to see every argv). */
  runner?: Runner
}

/** Start in beforeEach, stop in afterEach; `setup` then `upgrade` in a test. */
export class UpgradeHarness {
  api!: FakeApiServer
  /** Set when setup chose the contract fake. */
  helm?: FakeHelmEnv
  env: NodeJS.ProcessEnv = {}
  /** Delays the retry helper slept (intervalMs is 7 in these tests). */
  sleeps: number[] = []
  private tmp!: { dir: string; cleanup: () => Promise<void> }

  async start(): Promise<void> {
    this.api = await startFakeApiServer()
    this.tmp = await makeTempDir()
    this.sleeps = []
    this.helm = undefined
  }

  async stop(): Promise<void> {
    await this.api.stop()
    await this.tmp.cleanup()
  }

  get dir(): string {
    return this.tmp.dir
  }

  get fakeHelm(): FakeHelmEnv {
    if (!this.helm) throw new Error('this test set up the real helm, not the contract fake')
    return this.helm
  }

  get kubeconfigFile(): string {
    return path.join(this.tmp.dir, 'kubeconfig')
  }

  async setup(opts: SetupOptions): Promise<string> {
    const ws = await makeUpgradeWorkspace(path.join(this.tmp.dir, 'ws'), opts.targets, this.api)
    const installed = Object.entries(opts.installed).map(([name, version]) => ({
      name,
      version,
      namespace: RELEASE_NAMESPACES[name] ?? 'default',
    }))
    const major = opts.helm ?? 3
    if (major === 'fake') {
      this.helm = await fakeHelmEnv(this.tmp.dir, { fail: opts.fail, version: opts.helmVersion })
      this.env = this.helm.env
      await seedReleases(this.helm.stateDir, installed)
    } else {
      this.env = { ...process.env, ...(await realHelmEnv(this.tmp.dir, major)) }
      await writeFile(this.kubeconfigFile, this.api.kubeconfig(), { mode: 0o600 })
      await installFixtureReleases(await this.realHelm(), opts.installed)
    }
    // after the installs: the fixture cert-manager's CRD is helm's to create first
    seedCustomResources(this.api, 12)
    return ws
  }

  /** The releases as the cluster has them: name → version (with the status if not deployed). */
  async deployed(): Promise<Record<string, string>> {
    const releases: InstalledRelease[] = this.helm
      ? Object.values((await readFakeHelmState(this.helm.stateDir)).releases).map((r) => ({
          ...r,
          namespace: '',
        }))
      : await (await this.realHelm()).listReleases()
    return Object.fromEntries(
      releases.map((r) => [r.name, r.status === 'deployed' ? r.version : `${r.version} ${r.status}`]),
    )
  }

  realHelm(): Promise<Helm> {
    return Helm.detect({
      runner: createRunner(),
      binary: 'helm',
      env: this.env,
      kubeconfig: this.kubeconfigFile,
    })
  }

  async upgrade(ws: string, o: UpgradeOptions = {}): Promise<UpgradeReport> {
    const prepared = await prepareUpgrade(
      { workspace: ws, force: o.force ?? false },
      {
        runner: o.runner ?? createRunner(),
        env: { ...this.env, ...o.env },
        helmBounds: o.helmBounds,
        openReader: () => createClusterReader(this.kubeConfig()),
      },
    )
    return executeUpgrade(
      prepared,
      {
        workspace: ws,
        yes: o.yes ?? true,
        dryRun: o.dryRun ?? false,
        helmTimeoutMs: parseHelmTimeout(o.helmTimeout ?? '2m'),
      },
      this.deps(o.deps),
    )
  }

  /** The FakeApiServer's kubeconfig. */
  kubeConfig(): KubeconfigSource {
    return { text: this.api.kubeconfig(), what: 'the fake API server kubeconfig' }
  }

  private deps(over: Partial<ExecuteDeps> = {}): ExecuteDeps {
    const kc = this.kubeConfig()
    return {
      openReader: () => createClusterReader(kc),
      progress: async (steps) => {
        for (const s of steps) await s.run(() => {})
      },
      now: () => new Date('2026-01-02T03:04:05Z'),
      retry: { intervalMs: 7, sleep: async (ms) => void this.sleeps.push(ms) },
      ...over,
    }
  }
}
