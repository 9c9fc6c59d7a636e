/**
 * `bootstrap-data generate`: input objects → validated, defaulted, per-machine user data on disk,
 * with the CA set, the bootstrap token and, when needed, the object-store offload. All I/O of the
 * domain happens here; the renderers it calls are pure. Every check comes first and everything is
 * kept in memory until then: a run that fails leaves no file, upload or token behind.
 */
import path from 'node:path'
import { CliError, exitCodeOf, hintOf, messageOf } from '../errors/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { attestedPlan, type StateDiskOptions } from './attested.js'
import { renderCloudConfig } from './cloud-init.js'
import { renderIgnition } from './ignition.js'
import { kubeadmPlans } from './kubeadm-plans.js'
import { objectKey, parseS3Url, renderStub, type ObjectStore, type S3Location } from './offload.js'
import { assignRoles, type Assignment, type Waiting } from './orchestrate.js'
import { parseBootstrapObjects } from './parse.js'
import { writeAllOrNothing, type StagedFile } from './staged-writes.js'
import { outputTargets } from './targets.js'
import type { BootstrapTemplates } from './templates.js'
import { tokenSecret, type RandomBytes, type TokenSecret } from './tokens.js'
import type { BootstrapObjects, BootstrapPlan, OutputFormat } from './types.js'

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
  presignSeconds: number
  kubeconfig?: string
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
  registerToken: (kubeconfig: string, secret: TokenSecret) => Promise<void>
  /** Attested formats: the bcrypt hash of the workspace's init secret, for every node config. */
  initSecretHash: (workspace: string) => Promise<string>
}

export interface MachineResult {
  machine: string
  role: Assignment['role']
  format: OutputFormat
  file: string
  /** Raw size of the full document; what a provider's user-data limit is measured against. */
  bytes: number
  offload?: { object: string; stubBytes: number }
}

export interface GenerateResult {
  machines: MachineResult[]
  waiting: Waiting[]
  caDir?: string
  caFilesCreated: string[]
  adminKubeconfig?: string
  tokenSecret?: { name: string; expires: string; registered: boolean; file?: string }
}

interface Upload {
  location: { bucket: string; key: string }
  document: string
  contentType: string
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
  const formats = assignments.map((a) => opts.format ?? a.spec.format ?? 'cloud-config')
  // The workspace is always a directory, even before it exists.
  const targets = await outputTargets(opts.output ?? `${opts.workspace}${path.sep}`, assignments, formats)
  const result: GenerateResult = { machines: [], waiting, caFilesCreated: [] }
  const store =
    opts.upload !== undefined ? { location: parseS3Url(opts.upload), store: deps.objectStore() } : undefined
  const staged: StagedFile[] = []

  const { plans, token } = attested
    ? { plans: await attestedPlans(opts, deps, objects, assignments), token: undefined }
    : await kubeadmPlans(
        { ...opts, caDir: opts.caDir ?? path.join(opts.workspace, 'pki'), outDir: targets.dir },
        deps,
        objects,
        assignments,
        result,
        staged,
      )
  const documents = plans.map((plan, i) =>
    (formats[i] as OutputFormat).endsWith('ignition')
      ? renderIgnition(plan, deps.templates)
      : renderCloudConfig(plan),
  )
  if (!store)
    documents.forEach((doc, i) => checkLimit(doc, assignments[i] as Assignment, opts.maxUserDataBytes))
  const secret = token ? tokenSecret(token) : undefined
  if (secret) result.tokenSecret = stageTokenSecret(secret, opts.kubeconfig, targets.dir, staged)
  const uploads: Upload[] = []
  for (const [i, a] of assignments.entries()) {
    const entry: MachineResult = {
      machine: a.machine.metadata.name,
      role: a.role,
      format: formats[i] as OutputFormat,
      file: targets.files[i] as string,
      bytes: Buffer.byteLength(documents[i] as string),
    }
    let written = documents[i] as string
    if (store) {
      const offloaded = await offload(entry, written, store, opts.presignSeconds)
      uploads.push(offloaded.upload)
      written = offloaded.stub
    }
    staged.push({ file: entry.file, content: written, mode: 0o600 }) // init data holds CA keys
    result.machines.push(entry)
  }
  const kubeconfig = opts.kubeconfig
  const register = secret && kubeconfig ? () => deps.registerToken(kubeconfig, secret) : undefined
  await commit(staged, store?.store, uploads, register)
  return result
}

/** The token Secret goes to the cluster (--kubeconfig, later) or into a file beside the output. */
function stageTokenSecret(
  secret: TokenSecret,
  kubeconfig: string | undefined,
  outDir: string,
  staged: StagedFile[],
): NonNullable<GenerateResult['tokenSecret']> {
  const summary = { name: secret.metadata.name, expires: secret.stringData.expiration as string }
  if (kubeconfig) return { ...summary, registered: true }
  const file = path.join(outDir, `${secret.metadata.name}.yaml`)
  staged.push({ file, content: stringifyYaml(secret), mode: 0o600 })
  return { ...summary, registered: false, file }
}

/**
 * Every check has passed: the local files are written (all or nothing), then the network steps
 * run; when one of those fails, the files and uploads of this run are removed again.
 */
async function commit(
  staged: StagedFile[],
  store: ObjectStore | undefined,
  uploads: Upload[],
  register: (() => Promise<void>) | undefined,
): Promise<void> {
  const local = await writeAllOrNothing(staged)
  const uploaded: Upload[] = []
  try {
    for (const u of uploads) {
      await store?.put(u.location, u.document, u.contentType)
      uploaded.push(u)
    }
    await register?.()
  } catch (err) {
    await local.undo()
    const left = await removeUploads(store, uploaded)
    const undone = `removed the files${uploaded.length > 0 ? ' and uploads' : ''} this run had written`
    const cleanup = left.length > 0 ? `${undone} except ${left.join(', ')}: delete them` : undone
    throw new CliError(messageOf(err), exitCodeOf(err), [hintOf(err), cleanup].filter(Boolean).join('; '), {
      cause: err,
    })
  }
}

function checkLimit(document: string, a: Assignment, limit: number): void {
  const bytes = Buffer.byteLength(document)
  if (bytes <= limit) return
  throw new CliError(
    `user data for Machine "${a.machine.metadata.name}" is ${bytes} bytes, above the limit of ${limit}`,
    1,
    'pass --upload s3://bucket/prefix (and --s3-endpoint for a non-AWS store) to offload it, or raise --max-user-data-bytes if your provider allows more',
  )
}

/** The stub that fetches the full document over a presigned URL; the upload itself comes later. */
async function offload(
  entry: MachineResult,
  document: string,
  store: { location: S3Location; store: ObjectStore },
  presignSeconds: number,
): Promise<{ stub: string; upload: Upload }> {
  const location = {
    bucket: store.location.bucket,
    key: objectKey(store.location, path.basename(entry.file)),
  }
  const ignition = entry.format.endsWith('ignition')
  const url = await store.store.presignGet(location, presignSeconds)
  const stub = renderStub(ignition ? 'ignition' : 'cloud-config', url, document)
  entry.offload = { object: `s3://${location.bucket}/${location.key}`, stubBytes: Buffer.byteLength(stub) }
  return {
    stub,
    upload: { location, document, contentType: ignition ? 'application/json' : 'text/cloud-config' },
  }
}

/** Best effort; returns the objects that could not be removed. */
async function removeUploads(store: ObjectStore | undefined, uploads: Upload[]): Promise<string[]> {
  const left: string[] = []
  for (const u of uploads) {
    await store?.remove(u.location).catch(() => left.push(`s3://${u.location.bucket}/${u.location.key}`))
  }
  return left
}

async function attestedPlans(
  opts: GenerateOptions,
  deps: GenerateDeps,
  objects: BootstrapObjects,
  assignments: Assignment[],
): Promise<BootstrapPlan[]> {
  const initSecretHash = await deps.initSecretHash(opts.workspace).catch((err: unknown) => {
    throw new CliError(
      `attested data needs the workspace's init secret (its hash goes into every node config): ${messageOf(err)}`,
      exitCodeOf(err),
      hintOf(err),
      { cause: err },
    )
  })
  return assignments.map((a) =>
    attestedPlan({
      ...a,
      members: clusterMembers(objects, a),
      attestationVariant: opts.attestationVariant,
      secrets: objects.secrets,
      initSecretHash,
      stateDisk: opts.stateDisk,
    }),
  )
}

function clusterMembers(objects: BootstrapObjects, a: Assignment) {
  return objects.machines.filter((m) => m.spec.clusterName === a.cluster.metadata.name)
}
