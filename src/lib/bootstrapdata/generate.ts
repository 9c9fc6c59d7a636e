/**
 * `bootstrap-data generate`: input objects → validated, defaulted, per-machine user data on disk,
 * with the CA set, the bootstrap token and, when needed, the object-store offload. All I/O of the
 * domain happens from here (the modes, delivery.ts); the renderers it calls are pure. Every check
 * comes first and everything is kept in memory until then: a run that fails leaves no file, upload
 * or token behind.
 */
import path from 'node:path'
import { CliError } from '../errors/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { attestedMode } from './attested-mode.js'
import type { StateDiskOptions } from './attested.js'
import { renderCloudConfig } from './cloud-init.js'
import { renderIgnition } from './ignition.js'
import { kubeadmMode } from './kubeadm-mode.js'
import type { MachineJob } from './machine-job.js'
import { commit, deliver, type MachineResult, type Store, type Upload } from './delivery.js'
import { parseS3Url, type ObjectStore } from './offload.js'
import { assignRoles, type Assignment, type Waiting } from './orchestrate.js'
import { parseBootstrapObjects } from './parse.js'
import type { StagedFile } from './staged-writes.js'
import { outputTargets } from './targets.js'
import type { BootstrapTemplates } from './templates.js'
import type { RandomBytes, SecretObject } from '../kube/index.js'
import { tokenSecret } from './tokens.js'
import type { BootstrapPlan, OutputFormat } from './types.js'
import type { CaSecretApi } from './ca-secrets.js'
import type { KubeconfigSource } from './provider/capi-api.js'

export interface GenerateOptions {
  inputFile: string
  /** Where the CA set and the output go unless --ca-dir / -o say otherwise. */
  workspace: string
  machine?: string
  /** Overrides each KubeadmConfig's own `format`. */
  format?: OutputFormat
  /** A file (one machine) or a directory; default the workspace. */
  output?: string
  /** Default `<workspace>/pki`. */
  caDir?: string
  upload?: string
  maxUserDataBytes: number
  /** Set only with --presigned-url: the stub then holds a URL valid this long (a bearer secret). */
  presignedUrlSeconds?: number
  /** Where the bootstrap token is registered (the workload cluster's kubeconfig file). */
  workloadKubeconfig?: string
  /**
   * A management cluster: the CAs are the Cluster's CAPI Secrets there (not --ca-dir), and without
   * workloadKubeconfig the token goes to the workload cluster of its `<cluster>-kubeconfig` Secret.
   */
  managementKubeconfig?: string
  tokenTtlMs: number
  attestationVariant: string
  /** Attested formats: the state disk every node config names. */
  stateDisk: StateDiskOptions
}

export interface GenerateDeps {
  now: () => Date
  randomBytes: RandomBytes
  readInput: (file: string) => Promise<string>
  templates: BootstrapTemplates
  /** Only called when something is uploaded. */
  objectStore: () => ObjectStore
  registerToken: (kubeconfig: KubeconfigSource, secret: SecretObject) => Promise<void>
  /** Opens the management cluster (production: openKubeApi); called only with managementKubeconfig. */
  managementApi?: (kubeconfig: string) => Promise<CaSecretApi>
  /** Attested formats: the bcrypt hash of the workspace's init secret, for every node config. */
  initSecretHash: (workspace: string) => Promise<string>
}

export interface GenerateResult {
  machines: MachineResult[]
  waiting: Waiting[]
  caDir?: string
  caFilesCreated: string[]
  adminKubeconfig?: string
  tokenSecret?: { name: string; expires: string; registered: boolean; file?: string }
  caSecrets?: { namespace: string; cluster: string; created: string[] }
}

export async function generateBootstrapData(
  opts: GenerateOptions,
  deps: GenerateDeps,
): Promise<GenerateResult> {
  const attested = opts.format?.startsWith('attested-') ?? false
  const specFormat =
    opts.format === undefined ? undefined : opts.format.endsWith('ignition') ? 'ignition' : 'cloud-config'
  const objects = parseBootstrapObjects(await deps.readInput(opts.inputFile), opts.inputFile, {
    format: specFormat,
    attested,
  })
  const { assignments, waiting } = assignRoles(objects, { machine: opts.machine, anyTime: attested })
  if (assignments.length === 0) {
    throw new CliError(
      `no machine can get bootstrap data yet:\n${waiting.map((w) => `  ${w.machine}: ${w.reason}`).join('\n')}`,
    )
  }
  // The workspace is always a directory, even before it exists.
  const { dir, placed } = await outputTargets(
    opts.output ?? `${opts.workspace}${path.sep}`,
    assignments.map((a) => ({ ...a, format: opts.format ?? a.spec.format ?? 'cloud-config' })),
  )
  const store: Store | undefined =
    opts.upload !== undefined ? { location: parseS3Url(opts.upload), store: deps.objectStore() } : undefined
  const mode = attested
    ? await attestedMode(opts, deps, objects)
    : await kubeadmMode(
        { ...opts, caDir: opts.caDir ?? path.join(opts.workspace, 'pki'), outDir: dir },
        deps,
        objects,
        assignments,
      )
  // Every document is rendered before any is checked, so a plan error wins over a size error.
  const jobs: MachineJob[] = placed.map((p) => ({
    ...p,
    document: render(p.format, mode.planFor(p), deps.templates),
  }))
  if (!store) for (const job of jobs) checkLimit(job, opts.maxUserDataBytes)

  const result: GenerateResult = { machines: [], waiting, caFilesCreated: mode.ca?.filesCreated ?? [] }
  if (mode.ca) result.caDir = mode.ca.dir
  if (mode.caSecrets) result.caSecrets = mode.caSecrets
  if (mode.adminKubeconfig !== undefined) result.adminKubeconfig = mode.adminKubeconfig
  const staged: StagedFile[] = [...mode.files]
  const secret = mode.token ? tokenSecret(mode.token) : undefined
  const workload = secret ? await workloadCluster(opts, deps, assignments) : undefined
  if (secret) {
    const { summary, file } = tokenSecretOutput(secret, workload, dir)
    result.tokenSecret = summary
    if (file) staged.push(file)
  }
  const uploads: Upload[] = []
  for (const job of jobs) {
    const access = { presignSeconds: opts.presignedUrlSeconds, now: deps.now() }
    const { machine, upload, content } = await deliver(job, store, access)
    if (upload) uploads.push(upload)
    staged.push({ file: job.file, content, secret: true }) // init data holds CA keys
    result.machines.push(machine)
  }
  const register = secret && workload ? () => deps.registerToken(workload, secret) : undefined
  await commit(staged, store?.store, uploads, register)
  return result
}

function render(format: OutputFormat, plan: BootstrapPlan, templates: BootstrapTemplates): string {
  return format.endsWith('ignition') ? renderIgnition(plan, templates) : renderCloudConfig(plan)
}

/**
 * Where the token is registered: the workload kubeconfig given, or (as CAPI does) the one Cluster
 * API keeps in the management cluster's `<cluster>-kubeconfig` Secret; none: a file for the operator.
 */
async function workloadCluster(
  opts: GenerateOptions,
  deps: GenerateDeps,
  assignments: readonly Assignment[],
): Promise<KubeconfigSource | undefined> {
  if (opts.workloadKubeconfig) return { file: opts.workloadKubeconfig }
  const cluster = assignments[0]?.cluster
  if (!opts.managementKubeconfig || !deps.managementApi || !cluster) return undefined
  const namespace = cluster.metadata.namespace ?? 'default'
  const name = `${cluster.metadata.name}-kubeconfig`
  const api = await deps.managementApi(opts.managementKubeconfig)
  const text = (await api.getSecret(namespace, name))?.value
  return text ? { text, what: `the kubeconfig in Secret ${namespace}/${name}` } : undefined
}

/** The token Secret goes to the cluster (registered at commit) or into a file beside the output. */
function tokenSecretOutput(
  secret: SecretObject,
  kubeconfig: KubeconfigSource | undefined,
  outDir: string,
): { summary: NonNullable<GenerateResult['tokenSecret']>; file?: StagedFile } {
  const summary = { name: secret.metadata.name, expires: secret.stringData.expiration as string }
  if (kubeconfig) return { summary: { ...summary, registered: true } }
  const file = path.join(outDir, `${secret.metadata.name}.yaml`)
  return {
    summary: { ...summary, registered: false, file },
    file: { file, content: stringifyYaml(secret), secret: true },
  }
}

function checkLimit(job: MachineJob, limit: number): void {
  const bytes = Buffer.byteLength(job.document)
  if (bytes <= limit) return
  throw new CliError(
    `user data for Machine "${job.machine.metadata.name}" is ${bytes} bytes, above the limit of ${limit}`,
    {
      hint: 'pass --upload s3://bucket/prefix (and --s3-endpoint for a non-AWS store) to offload it, or raise --max-user-data-bytes if your provider allows more',
    },
  )
}
