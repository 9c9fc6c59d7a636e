/** Shared setup of the lib-level upgrade tests: FakeApiServer, the helm contract fake, a workspace. */
import { access } from 'node:fs/promises'
import path from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { createRunner } from '../../src/lib/system/index.js'
import {
  createClusterReader,
  executeUpgrade,
  prepareUpgrade,
  type ExecuteDeps,
  type UpgradeReport,
} from '../../src/lib/upgrade/index.js'
import { makeTempDir } from '../support/temp.js'
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver.js'
import { fakeHelmEnv, seedReleases, type FakeHelmEnv } from '../support/helm.js'
import {
  makeUpgradeWorkspace,
  RELEASE_NAMESPACES,
  seedCustomResources,
} from '../support/upgrade-workspace.js'
import { type HelmBounds } from '../../src/lib/upgrade/helm.js'

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
  fail?: string
  helmVersion?: string
}

export interface UpgradeOptions {
  force?: boolean
  dryRun?: boolean
  yes?: boolean
  deps?: Partial<ExecuteDeps>
  /** Added to the fake helm's environment (FAKE_HELM_HANG, FAKE_HELM_GARBAGE, …). */
  env?: NodeJS.ProcessEnv
  helmBounds?: Partial<HelmBounds>
  helmTimeout?: string
}

/** Start in beforeEach, stop in afterEach; `setup` then `upgrade` in a test. */
export class UpgradeHarness {
  api!: FakeApiServer
  helm!: FakeHelmEnv
  /** Delays the retry helper slept (intervalMs is 7 in these tests). */
  sleeps: number[] = []
  private tmp!: { dir: string; cleanup: () => Promise<void> }

  async start(): Promise<void> {
    this.api = await startFakeApiServer()
    seedCustomResources(this.api, 12)
    this.tmp = await makeTempDir()
    this.sleeps = []
  }

  async stop(): Promise<void> {
    await this.api.stop()
    await this.tmp.cleanup()
  }

  get dir(): string {
    return this.tmp.dir
  }

  async setup(opts: SetupOptions): Promise<string> {
    const ws = await makeUpgradeWorkspace(path.join(this.tmp.dir, 'ws'), opts.targets, this.api)
    this.helm = await fakeHelmEnv(this.tmp.dir, { fail: opts.fail, version: opts.helmVersion })
    await seedReleases(
      this.helm.stateDir,
      Object.entries(opts.installed).map(([name, version]) => ({
        name,
        version,
        namespace: RELEASE_NAMESPACES[name] ?? 'default',
      })),
    )
    return ws
  }

  async upgrade(ws: string, o: UpgradeOptions = {}): Promise<UpgradeReport> {
    const prepared = await prepareUpgrade(
      { workspace: ws, force: o.force ?? false },
      {
        runner: createRunner(),
        env: { ...this.helm.env, ...o.env },
        helmBounds: o.helmBounds,
        openReader: () => createClusterReader(this.kubeConfig()),
      },
    )
    return executeUpgrade(
      prepared,
      { workspace: ws, yes: o.yes ?? true, dryRun: o.dryRun ?? false, helmTimeout: o.helmTimeout ?? '2m' },
      this.deps(o.deps),
    )
  }

  /** The FakeApiServer's kubeconfig, loaded. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig()
    kc.loadFromString(this.api.kubeconfig())
    return kc
  }

  private deps(over: Partial<ExecuteDeps> = {}): ExecuteDeps {
    const kc = this.kubeConfig()
    return {
      openReader: () => createClusterReader(kc),
      progress: async (steps) => {
        for (const s of steps) await s.run()
      },
      now: () => new Date('2026-01-02T03:04:05Z'),
      retry: { intervalMs: 7, sleep: async (ms) => void this.sleeps.push(ms) },
      ...over,
    }
  }
}
