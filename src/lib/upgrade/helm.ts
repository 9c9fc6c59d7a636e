/**
 * The helm binary on PATH, behind a small typed surface: version detection (v3 vs v4 flags),
 * release listing and status, upgrade with rollback on failure, explicit rollback, and rendering.
 */
import { CliError, isErrnoException } from '../errors/index.js'
import type { ProcessResult, RunProcess } from '../system/index.js'
import type { ReleaseTarget } from './releases.js'
import { compareSemver, parseSemver } from './rules.js'

/** Helm 3.8 is the oldest with OCI registries on by default; 4 is the newest major we know. */
const MIN_HELM_3 = '3.8.0'

export interface HelmEnv {
  run: RunProcess
  /** The binary, looked up on `env.PATH` when it is a bare name. */
  binary: string
  env: NodeJS.ProcessEnv
  /** Passed to every command that talks to the cluster. */
  kubeconfig?: string
}

export interface InstalledRelease {
  name: string
  namespace: string
  /** Chart version of the release's current revision. */
  version: string
  /** Helm's status: deployed, failed, pending-upgrade, pending-rollback, … */
  status: string
  revision: number
}

export class HelmCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly result: ProcessResult,
  ) {
    const detail = (result.stderr || result.stdout).trim().split('\n').slice(-5).join('\n')
    super(`helm ${args[0] ?? ''} ${args[1] ?? ''} exited with code ${result.code ?? 'signal'}: ${detail}`)
    this.name = 'HelmCommandError'
  }
}

export class Helm {
  private constructor(
    private readonly h: HelmEnv,
    /** e.g. v3.14.2 or v4.1.4 */
    readonly version: string,
    readonly major: 3 | 4,
  ) {}

  /** Finds helm and checks its version; a missing or unsupported helm is a clear CliError. */
  static async detect(h: HelmEnv): Promise<Helm> {
    let result: ProcessResult
    try {
      result = await h.run(h.binary, ['version', '--template', '{{.Version}}'], { env: h.env })
    } catch (err) {
      if (isErrnoException(err, 'ENOENT') || isErrnoException(err, 'EACCES')) {
        throw new CliError(
          `helm was not found on PATH (looked for ${JSON.stringify(h.binary)})`,
          1,
          `install Helm ${MIN_HELM_3} or newer (3.x or 4.x) and put it on PATH`,
          { cause: err },
        )
      }
      throw err
    }
    const version = result.stdout.trim()
    const parsed = parseSemver(version)
    if (result.code !== 0 || !parsed) {
      throw new CliError(
        `could not read the helm version: ${JSON.stringify((result.stderr || result.stdout).trim().slice(0, 200))}`,
        1,
        `install Helm ${MIN_HELM_3} or newer (3.x or 4.x)`,
      )
    }
    const min = parseSemver(MIN_HELM_3)
    const tooOld =
      parsed.major < 3 || (parsed.major === 3 && min !== undefined && compareSemver(parsed, min) < 0)
    if (tooOld || parsed.major > 4) {
      throw new CliError(
        `helm ${version} is not supported`,
        1,
        `install Helm ${MIN_HELM_3} or newer 3.x, or Helm 4.x`,
      )
    }
    return new Helm(h, version, parsed.major === 3 ? 3 : 4)
  }

  /** Flags that make an upgrade roll itself back on failure and wait for readiness. */
  rollbackOnFailureFlags(): string[] {
    return this.major === 3 ? ['--atomic', '--wait'] : ['--rollback-on-failure', '--wait=watcher']
  }

  private waitFlag(): string {
    return this.major === 3 ? '--wait' : '--wait=watcher'
  }

  private kube(): string[] {
    return this.h.kubeconfig ? ['--kubeconfig', this.h.kubeconfig] : []
  }

  private async exec(args: string[], timeoutMs?: number): Promise<string> {
    const result = await this.h.run(this.h.binary, args, { env: this.h.env, timeoutMs })
    if (result.code !== 0) throw new HelmCommandError(args, result)
    return result.stdout
  }

  async listReleases(): Promise<InstalledRelease[]> {
    const out = await this.exec(['list', '--all-namespaces', '--all', '--output', 'json', ...this.kube()])
    return parseReleaseList(out)
  }

  /** The status of one release, or undefined when it does not exist (e.g. a removed failed install). */
  async status(name: string, namespace: string): Promise<string | undefined> {
    const args = ['status', name, '--namespace', namespace, '--output', 'json', ...this.kube()]
    const result = await this.h.run(this.h.binary, args, { env: this.h.env })
    if (result.code !== 0) {
      if (/not found/i.test(result.stderr)) return undefined
      throw new HelmCommandError(args, result)
    }
    const info = (JSON.parse(result.stdout) as { info?: { status?: unknown } }).info
    return typeof info?.status === 'string' ? info.status : 'unknown'
  }

  /** `upgrade --install` with rollback on failure; `timeout` is a Go duration like 10m. */
  async upgrade(t: ReleaseTarget, valuesFile: string, timeout: string): Promise<void> {
    await this.exec([
      'upgrade',
      '--install',
      t.name,
      t.chart,
      ...this.source(t),
      '--namespace',
      t.namespace,
      '--create-namespace',
      '--reset-values',
      '--values',
      valuesFile,
      ...this.rollbackOnFailureFlags(),
      '--timeout',
      timeout,
      ...this.kube(),
    ])
  }

  /** An explicit rollback with its own timeout, for when Helm's built-in one ran out of time. */
  async rollback(name: string, namespace: string, timeout: string): Promise<void> {
    await this.exec([
      'rollback',
      name,
      '--namespace',
      namespace,
      this.waitFlag(),
      '--timeout',
      timeout,
      ...this.kube(),
    ])
  }

  /** The manifests the chart renders with these values, CRDs included (no cluster access). */
  async template(t: ReleaseTarget, valuesFile: string): Promise<string> {
    return this.exec([
      'template',
      t.name,
      t.chart,
      ...this.source(t),
      '--namespace',
      t.namespace,
      '--values',
      valuesFile,
      '--include-crds',
    ])
  }

  /** The chart version a local chart path really holds (Helm ignores --version for paths). */
  async localChartVersion(chartPath: string): Promise<string> {
    const out = await this.exec(['show', 'chart', chartPath])
    const version = /^version:\s*["']?([^"'\s]+)/m.exec(out)?.[1]
    if (!version) throw new Error(`helm show chart ${chartPath} printed no version`)
    return version
  }

  /** What is deployed now: the release's user values and manifest, for the backup. */
  async installedValues(name: string, namespace: string): Promise<string> {
    return this.exec(['get', 'values', name, '--namespace', namespace, '--output', 'yaml', ...this.kube()])
  }

  async installedManifest(name: string, namespace: string): Promise<string> {
    return this.exec(['get', 'manifest', name, '--namespace', namespace, ...this.kube()])
  }

  private source(t: ReleaseTarget): string[] {
    return t.repository ? ['--repo', t.repository, '--version', t.version] : ['--version', t.version]
  }
}

/** `helm list -o json` → releases; the chart field is `<chart name>-<chart version>`. */
export function parseReleaseList(json: string): InstalledRelease[] {
  const raw: unknown = JSON.parse(json || '[]')
  if (!Array.isArray(raw)) throw new Error('helm list printed something other than a JSON array')
  return raw.map((entry: unknown, i) => {
    const r = entry as Record<string, unknown>
    const chart = typeof r.chart === 'string' ? r.chart : ''
    const version = /-(v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)$/.exec(chart)?.[1]
    if (typeof r.name !== 'string' || typeof r.namespace !== 'string' || !version) {
      throw new Error(
        `helm list entry ${i} has no name, namespace or chart version: ${JSON.stringify(entry)}`,
      )
    }
    return {
      name: r.name,
      namespace: r.namespace,
      version,
      status: typeof r.status === 'string' ? r.status : 'unknown',
      revision: Number(r.revision ?? 0),
    }
  })
}
