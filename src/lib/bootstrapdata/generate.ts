/**
 * `bootstrap-data generate`: input objects → validated, defaulted, per-machine user data on disk,
 * with the CA set, the bootstrap token and, when needed, the object-store offload. All I/O of the
 * domain happens here; the renderers it calls are pure.
 */
import { access, stat } from 'node:fs/promises'
import path from 'node:path'
import { CliError, UsageError } from '../errors/index.js'
import { writeFileExclusive } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'
import { attestedPlan } from './attested.js'
import { caCertHash, loadOrCreateAuthorities } from './certs.js'
import { renderCloudConfig } from './cloud-init.js'
import { controlPlaneEndpoint, givenJoinToken, usesFileDiscovery } from './defaults.js'
import { renderIgnition } from './ignition.js'
import { createAdminKubeconfig } from './kubeconfig.js'
import { objectKey, parseS3Url, renderStub, type ObjectStore, type S3Location } from './offload.js'
import { assignRoles, type Assignment, type Waiting } from './orchestrate.js'
import { parseBootstrapObjects } from './parse.js'
import { kubeadmPlan } from './plan.js'
import type { BootstrapTemplates } from './templates.js'
import {
  generateBootstrapToken,
  tokenSecret,
  tokenString,
  type RandomBytes,
  type TokenSecret,
} from './tokens.js'
import type {
  BootstrapObjects,
  BootstrapPlan,
  BootstrapToken,
  CertificateAuthorities,
  OutputFormat,
} from './types.js'

export interface GenerateOptions {
  inputFile: string
  machine?: string
  /** Overrides each KubeadmConfig's own `format`. */
  format?: OutputFormat
  /** A file (one machine) or a directory; default the current directory. */
  output?: string
  caDir: string
  upload?: string
  maxUserDataBytes: number
  presignSeconds: number
  kubeconfig?: string
  tokenTtlMs: number
  attestationVariant: string
}

export interface GenerateDeps {
  now: () => Date
  randomBytes: RandomBytes
  readInput: (file: string) => Promise<string>
  templates: BootstrapTemplates
  /** Only called when something is uploaded. */
  objectStore: () => ObjectStore
  registerToken: (kubeconfig: string, secret: TokenSecret) => Promise<void>
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
  const targets = await outputTargets(opts.output, assignments, formats)
  const result: GenerateResult = { machines: [], waiting, caFilesCreated: [] }
  const store =
    opts.upload !== undefined ? { location: parseS3Url(opts.upload), store: deps.objectStore() } : undefined

  const { plans, token } = attested
    ? {
        plans: assignments.map((a) =>
          attestedPlan({
            ...a,
            members: clusterMembers(objects, a),
            attestationVariant: opts.attestationVariant,
            secrets: objects.secrets,
          }),
        ),
        token: undefined,
      }
    : await kubeadmPlans(opts, deps, objects, assignments, targets.dir, result)
  const documents = plans.map((plan, i) =>
    (formats[i] as OutputFormat).endsWith('ignition')
      ? renderIgnition(plan, deps.templates)
      : renderCloudConfig(plan),
  )
  // Every limit is checked before the token is stored or anything is uploaded or written.
  if (!store)
    documents.forEach((doc, i) => checkLimit(doc, assignments[i] as Assignment, opts.maxUserDataBytes))
  if (token) result.tokenSecret = await storeToken(tokenSecret(token), opts.kubeconfig, targets.dir, deps)
  for (const [i, a] of assignments.entries()) {
    const entry: MachineResult = {
      machine: a.machine.metadata.name,
      role: a.role,
      format: formats[i] as OutputFormat,
      file: targets.files[i] as string,
      bytes: Buffer.byteLength(documents[i] as string),
    }
    result.machines.push(await writeMachineData(entry, documents[i] as string, store, opts.presignSeconds))
  }
  return result
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

/** Writes the document, or uploads it and writes the stub that fetches it. */
async function writeMachineData(
  entry: MachineResult,
  document: string,
  store: { location: S3Location; store: ObjectStore } | undefined,
  presignSeconds: number,
): Promise<MachineResult> {
  let written = document
  if (store) {
    const location = {
      bucket: store.location.bucket,
      key: objectKey(store.location, path.basename(entry.file)),
    }
    const ignition = entry.format.endsWith('ignition')
    await store.store.put(location, document, ignition ? 'application/json' : 'text/cloud-config')
    const url = await store.store.presignGet(location, presignSeconds)
    written = renderStub(ignition ? 'ignition' : 'cloud-config', url, document)
    entry.offload = {
      object: `s3://${location.bucket}/${location.key}`,
      stubBytes: Buffer.byteLength(written),
    }
  }
  await writeFileExclusive(entry.file, written, 0o600) // init data holds CA keys
  return entry
}

async function kubeadmPlans(
  opts: GenerateOptions,
  deps: GenerateDeps,
  objects: BootstrapObjects,
  assignments: Assignment[],
  outDir: string,
  result: GenerateResult,
): Promise<{ plans: BootstrapPlan[]; token?: BootstrapToken }> {
  const now = deps.now()
  const hasInit = assignments.some((a) => a.role === 'init')
  const { authorities, created } = await loadOrCreateAuthorities(opts.caDir, { generate: hasInit, now })
  result.caDir = path.resolve(opts.caDir)
  result.caFilesCreated = created
  const init = assignments.find((a) => a.role === 'init')
  if (init) result.adminKubeconfig = await writeAdminKubeconfig(authorities, init, outDir, now)
  const needsToken = assignments.some(
    (a) => a.role !== 'init' && !givenJoinToken(a.spec) && !usesFileDiscovery(a.spec),
  )
  const token = needsToken ? generateBootstrapToken(deps.randomBytes, now, opts.tokenTtlMs) : undefined
  const caCertHashes = [caCertHash(authorities.ca.certPem)]
  const plans = assignments.map((a) => {
    if (a.role === 'init') return kubeadmPlan({ ...a, authorities, secrets: objects.secrets })
    const apiServerEndpoint = controlPlaneEndpoint(a.cluster)
    if (!apiServerEndpoint && !usesFileDiscovery(a.spec)) {
      throw new CliError(
        `${a.cluster.origin.file}:${a.cluster.origin.line ?? 1}: Cluster "${a.cluster.metadata.name}": spec.controlPlaneEndpoint (host and port) is required for join data`,
      )
    }
    const discovery = {
      apiServerEndpoint: apiServerEndpoint ?? '',
      token: token ? tokenString(token) : '',
      caCertHashes,
    }
    return kubeadmPlan({ ...a, authorities, discovery, secrets: objects.secrets })
  })
  return { plans, token }
}

async function storeToken(
  secret: TokenSecret,
  kubeconfig: string | undefined,
  outDir: string,
  deps: GenerateDeps,
) {
  const summary = { name: secret.metadata.name, expires: secret.stringData.expiration as string }
  if (kubeconfig) {
    await deps.registerToken(kubeconfig, secret)
    return { ...summary, registered: true }
  }
  const file = path.join(outDir, `${secret.metadata.name}.yaml`)
  await writeFileExclusive(file, stringifyYaml(secret), 0o600)
  return { ...summary, registered: false, file }
}

/** Written once, beside the output; an existing one is kept (it may be in use). */
async function writeAdminKubeconfig(
  cas: CertificateAuthorities,
  init: Assignment,
  outDir: string,
  now: Date,
) {
  const name = init.cluster.metadata.name
  const file = path.join(outDir, `${name}.kubeconfig`)
  if (await exists(file)) return file
  const endpoint = controlPlaneEndpoint(init.cluster)
  if (!endpoint) return undefined
  await writeFileExclusive(file, createAdminKubeconfig(cas.ca, name, `https://${endpoint}`, now), 0o600)
  return file
}

function clusterMembers(objects: BootstrapObjects, a: Assignment) {
  return objects.machines.filter((m) => m.spec.clusterName === a.cluster.metadata.name)
}

/** Output paths, checked before anything is written so a clash leaves the disk untouched. */
async function outputTargets(output: string | undefined, assignments: Assignment[], formats: OutputFormat[]) {
  const existing = output === undefined ? undefined : await stat(output).catch(() => undefined)
  // A path that does not exist yet is a directory when several machines need a file each.
  const isDir =
    output === undefined ||
    output.endsWith('/') ||
    existing?.isDirectory() === true ||
    (existing === undefined && assignments.length > 1)
  if (!isDir && assignments.length > 1) {
    throw new UsageError(
      `-o ${output} is a file, but ${assignments.length} machines get data; pass a directory or --machine`,
    )
  }
  const dir = isDir ? path.resolve(output ?? '.') : path.dirname(path.resolve(output as string))
  const files = assignments.map((a, i) =>
    isDir
      ? path.join(
          dir,
          `${a.machine.metadata.name}.${formats[i]?.endsWith('ignition') ? 'ign' : 'cloud-config'}`,
        )
      : path.resolve(output as string),
  )
  for (const file of files) {
    if (await exists(file))
      throw new CliError(
        `${file} already exists`,
        1,
        'move it away or choose another -o; nothing was changed',
      )
  }
  return { dir, files }
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  )
