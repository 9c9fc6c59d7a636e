/**
 * The helm binary on PATH, behind a small typed surface: version detection (v3 vs v4 flags),
 * release listing and status, upgrade with rollback on failure, explicit rollback, and rendering.
 * Every helm process runs under a bound and is killed when it passes it: a hung helm (or a cluster
 * that accepts and never answers) must not hang the CLI.
 */
import { CliError, isErrnoException } from '../../errors/index.js'
import { CommandFailedError, MAX_DURATION_MS, type CommandOutput, type Runner } from '../../system/index.js'
import { helmArgs, VERSION_ARGS, type ChartSource, type HelmArgs, type HelmMajor } from './helm-args.js'
import { helmFailureMessage, inHelmWords } from './helm-failure.js'
import { printable } from './printable.js'
import { compareSemver, parseSemver } from '../../versions/index.js'
import { isValues, type Values } from './values.js'

/** Helm 3.8 is the oldest with OCI registries on by default; 4 is the newest major we know. */
const MIN_HELM_3 = '3.8.0'

/** How long each kind of helm process may run before it is killed. */
export interface HelmBounds {
  /** version, list, status, get: reads that answer in seconds when the cluster is there. */
  queryMs: number
  /** template and show: may download the chart first. */
  renderMs: number
  /** Added to the waits of upgrade and rollback (see boundFor): helm's start, hooks and cleanup. */
  marginMs: number
}

export const DEFAULT_HELM_BOUNDS: HelmBounds = { queryMs: 60_000, renderMs: 180_000, marginMs: 120_000 }

export interface HelmEnv {
  runner: Runner
  /** The binary, looked up on `env.PATH` when it is a bare name. */
  binary: string
  env: NodeJS.ProcessEnv
  /** Passed to every command that talks to the cluster. */
  kubeconfig?: string
  bounds?: Partial<HelmBounds>
}

/**
 * Where helm reads a release's values: a file (an upgrade's, kept in its backup), or stdin
 * (`--values -`: init's bring-up leaves no file behind, whatever ends it). Never argv.
 */
export type ValuesSource = { file: string } | { yaml: string }

/** What running helm needs: the process runner, and the environment whose PATH finds helm. */
export interface HelmProcessDeps {
  runner: Runner
  /** Environment of every helm call; its PATH decides which helm runs. */
  env: NodeJS.ProcessEnv
  helmBinary?: string
  /** How long each helm process may run (tests shorten them). */
  helmBounds?: Partial<HelmBounds>
}

/** The helm on the deps' PATH, for the cluster of `kubeconfig` (see Helm.detect). */
export function detectHelm(deps: HelmProcessDeps, kubeconfig: string): Promise<Helm> {
  return Helm.detect({
    runner: deps.runner,
    binary: deps.helmBinary ?? 'helm',
    env: deps.env,
    kubeconfig,
    bounds: deps.helmBounds,
  })
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

export class Helm {
  private readonly args: HelmArgs
  private readonly bounds: HelmBounds

  private constructor(
    private readonly h: HelmEnv,
    /** e.g. v3.14.2 or v4.1.4 */
    readonly version: string,
    readonly major: HelmMajor,
  ) {
    this.args = helmArgs(major, h.kubeconfig)
    this.bounds = boundsOf(h)
  }

  /** Finds helm and checks its version; a missing, hung or unsupported helm is a clear CliError. */
  static async detect(h: HelmEnv): Promise<Helm> {
    const boundMs = boundsOf(h).queryMs
    let output: CommandOutput
    try {
      output = await h.runner.run(h.binary, VERSION_ARGS, { env: h.env, timeoutMs: boundMs })
    } catch (err) {
      throw versionError(h.binary, err, boundMs)
    }
    const version = output.stdout.trim()
    const parsed = parseSemver(version)
    if (!parsed) throw unreadableVersion(output)
    const min = parseSemver(MIN_HELM_3)
    const tooOld =
      parsed.major < 3 || (parsed.major === 3 && min !== undefined && compareSemver(parsed, min) < 0)
    if (tooOld || parsed.major > 4) {
      throw new CliError(`helm ${printable(version)} is not supported`, {
        hint: `install Helm ${MIN_HELM_3} or newer 3.x, or Helm 4.x`,
      })
    }
    return new Helm(h, version, parsed.major === 3 ? 3 : 4)
  }

  /** Runs helm under `boundMs`; a failure is a CommandFailedError in helm's words (helm-failure.ts). */
  private async runHelm(args: string[], boundMs: number, input?: string): Promise<CommandOutput> {
    try {
      return await this.h.runner.run(this.h.binary, args, { env: this.h.env, timeoutMs: boundMs, input })
    } catch (err) {
      throw inHelmWords(err, boundMs)
    }
  }

  private async exec(args: string[], boundMs: number, input?: string): Promise<string> {
    return (await this.runHelm(args, boundMs, input)).stdout
  }

  async listReleases(): Promise<InstalledRelease[]> {
    return parseReleaseList(await this.exec(this.args.list(), this.bounds.queryMs))
  }

  /** The status of one release, or undefined when it does not exist (e.g. a removed failed install). */
  async status(name: string, namespace: string): Promise<string | undefined> {
    let output: CommandOutput
    try {
      output = await this.runHelm(this.args.status(name, namespace), this.bounds.queryMs)
    } catch (err) {
      const exited = err instanceof CommandFailedError && err.exitCode !== undefined && !err.timedOut
      if (exited && /not found/i.test(err.stderr)) return undefined
      throw err
    }
    let info: { status?: unknown } | undefined
    try {
      info = (JSON.parse(output.stdout) as { info?: { status?: unknown } } | null)?.info
    } catch {
      // Keep what helm said: its stderr is often the only explanation of garbage on stdout.
      const said = output.stderr.trim() ? `; helm said: ${printable(output.stderr.trim())}` : ''
      throw new Error(
        `helm status ${name} printed no JSON status: ${printable(JSON.stringify(output.stdout.slice(0, 200)))}${said}`,
      )
    }
    return typeof info?.status === 'string' ? printable(info.status) : 'unknown'
  }

  /** `upgrade --install` with rollback on failure (unless `wait` is false), helm waiting up to `timeoutMs`. */
  async upgrade(
    t: ChartSource,
    values: ValuesSource,
    timeoutMs: number,
    opts: { wait: boolean } = { wait: true },
  ): Promise<void> {
    const file = 'file' in values ? values.file : '-'
    const input = 'yaml' in values ? values.yaml : undefined
    // A failed upgrade's own rollback waits up to `timeoutMs` again: killing helm then would leave
    // the release pending-rollback, so the bound allows both waits.
    await this.exec(this.args.upgrade(t, file, timeoutMs, opts), this.boundFor(timeoutMs, 2), input)
  }

  /** An explicit rollback with its own timeout, for when Helm's built-in one ran out of time. */
  async rollback(name: string, namespace: string, timeoutMs: number, revision?: number): Promise<void> {
    await this.exec(this.args.rollback(name, namespace, timeoutMs, revision), this.boundFor(timeoutMs, 1))
  }

  /** The manifests the chart renders with these values, CRDs included (no cluster access). */
  async template(t: ChartSource, valuesFile: string): Promise<string> {
    return this.exec(this.args.template(t, valuesFile), this.bounds.renderMs)
  }

  /** The chart version a local chart path really holds (Helm ignores --version for paths). */
  async localChartVersion(chartPath: string): Promise<string> {
    const out = await this.exec(this.args.showChart(chartPath), this.bounds.renderMs)
    const version = /^version:\s*["']?([^"'\s]+)/m.exec(out)?.[1]
    if (!version) throw new Error(`helm show chart ${chartPath} printed no version`)
    return printable(version)
  }

  /** What is deployed now: the release's user values and manifest, for the backup. */
  async installedValues(name: string, namespace: string): Promise<string> {
    return this.exec(this.args.getValues(name, namespace, 'yaml'), this.bounds.queryMs)
  }

  /** The values set on the release, as data: an upgrade keeps them (values.ts). */
  async userValues(name: string, namespace: string): Promise<Values> {
    const out = await this.exec(this.args.getValues(name, namespace, 'json'), this.bounds.queryMs)
    let parsed: unknown
    try {
      parsed = JSON.parse(out.trim() || 'null')
    } catch {
      throw new Error(
        `helm get values ${name} printed no JSON: ${printable(JSON.stringify(out.slice(0, 200)))}`,
      )
    }
    // a release installed without values has `null`
    if (parsed === null) return {}
    if (!isValues(parsed)) throw new Error(`helm get values ${name} printed something other than a map`)
    return parsed
  }

  async installedManifest(name: string, namespace: string): Promise<string> {
    return this.exec(this.args.getManifest(name, namespace), this.bounds.queryMs)
  }

  /** Helm waits up to `timeoutMs` per wait itself; the margin lets it report before we kill it. */
  private boundFor(timeoutMs: number, waits: number): number {
    // capped where a timer still fires late rather than at once
    return Math.min(waits * timeoutMs + this.bounds.marginMs, MAX_DURATION_MS)
  }
}

const boundsOf = (h: HelmEnv): HelmBounds => ({ ...DEFAULT_HELM_BOUNDS, ...h.bounds })

/** Why `helm version` gave no version: not installed, hung, or failed. */
function versionError(binary: string, err: unknown, boundMs: number): unknown {
  if (!(err instanceof CommandFailedError)) return err
  if (err.exitCode === undefined) {
    if (!isErrnoException(err.cause, 'ENOENT') && !isErrnoException(err.cause, 'EACCES')) return err
    return new CliError(`helm was not found on PATH (looked for ${JSON.stringify(binary)})`, {
      hint: `install Helm ${MIN_HELM_3} or newer (3.x or 4.x) and put it on PATH`,
      cause: err.cause,
    })
  }
  if (err.timedOut) {
    return new CliError(`reading the helm version: ${helmFailureMessage(err, boundMs)}`, {
      hint: `check that \`${binary} version\` answers on this machine`,
    })
  }
  return unreadableVersion(err)
}

function unreadableVersion(output: CommandOutput): CliError {
  return new CliError(
    `could not read the helm version: ${printable(JSON.stringify((output.stderr || output.stdout).trim().slice(0, 200)))}`,
    { hint: `install Helm ${MIN_HELM_3} or newer (3.x or 4.x)` },
  )
}

/** `helm list -o json` → releases; the chart field is `<chart name>-<chart version>`. */
export function parseReleaseList(json: string): InstalledRelease[] {
  let raw: unknown
  try {
    raw = JSON.parse(json || '[]')
  } catch {
    throw new Error(`helm list printed no JSON: ${printable(JSON.stringify(json.slice(0, 200)))}`)
  }
  if (!Array.isArray(raw)) throw new Error('helm list printed something other than a JSON array')
  return raw.map((entry: unknown, i) => {
    const r = entry as Record<string, unknown>
    const chart = typeof r.chart === 'string' ? r.chart : ''
    const version = /-(v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)$/.exec(chart)?.[1]
    if (typeof r.name !== 'string' || typeof r.namespace !== 'string' || !version) {
      throw new Error(
        `helm list entry ${i} has no name, namespace or chart version: ${printable(JSON.stringify(entry))}`,
      )
    }
    return {
      name: printable(r.name),
      namespace: printable(r.namespace),
      version,
      status: typeof r.status === 'string' ? printable(r.status) : 'unknown',
      revision: Number(r.revision ?? 0),
    }
  })
}
