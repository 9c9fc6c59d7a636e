/**
 * Kubeadm mode: the CA set (loaded, or generated in memory for init), the admin kubeconfig, the
 * bootstrap token and each machine's kubeadm plan. Files are staged, not written.
 */
import path from 'node:path'
import { CliError } from '../errors/index.js'
import { exists } from '../system/index.js'
import { loadOrCreateCaSecrets, type CaSecretApi } from './ca-secrets.js'
import { caCertHash, loadOrCreateAuthorities } from './certs.js'
import { controlPlaneEndpoint, givenJoinToken, usesFileDiscovery } from './defaults.js'
import { createAdminKubeconfig } from './kubeconfig.js'
import type { ModeSetup } from './machine-job.js'
import type { Assignment } from './orchestrate.js'
import { kubeadmPlan } from './plan.js'
import type { StagedFile } from './staged-writes.js'
import { generateBootstrapToken, tokenString, type BootstrapToken, type RandomBytes } from '../kube/index.js'
import type { BootstrapObjects, BootstrapPlan, CertificateAuthorities } from './types.js'

export interface KubeadmModeOptions {
  caDir: string
  outDir: string
  tokenTtlMs: number
  /** The CA set is the Cluster's CAPI Secrets in this management cluster, not the files in caDir. */
  managementKubeconfig?: string
}

export interface KubeadmModeDeps {
  now: () => Date
  randomBytes: RandomBytes
  /** Opens the management cluster's API (production: openKubeApi); needed with managementKubeconfig. */
  managementApi?: (kubeconfig: string) => Promise<CaSecretApi>
}

export async function kubeadmMode(
  opts: KubeadmModeOptions,
  deps: KubeadmModeDeps,
  objects: BootstrapObjects,
  assignments: readonly Assignment[],
): Promise<ModeSetup> {
  const now = deps.now()
  const init = assignments.find((a) => a.role === 'init')
  const { authorities, toWrite, ca, caSecrets } = await certificateAuthorities(opts, deps, assignments, now)
  const files: StagedFile[] = [...toWrite]
  const kubeconfig = init ? await adminKubeconfig(authorities, init, opts.outDir, now) : undefined
  if (kubeconfig?.staged) files.push(kubeconfig.staged)
  const needsToken = assignments.some(
    (a) => a.role !== 'init' && !givenJoinToken(a.spec) && !usesFileDiscovery(a.spec),
  )
  const token = needsToken ? generateBootstrapToken(deps.randomBytes, now, opts.tokenTtlMs) : undefined
  const caCertHashes = [caCertHash(authorities.ca.certPem)]
  return {
    planFor: (a) => planFor(a, { authorities, token, caCertHashes, secrets: objects.secrets }),
    files,
    token,
    ...(ca ? { ca } : {}),
    ...(caSecrets ? { caSecrets } : {}),
    adminKubeconfig: kubeconfig?.file,
  }
}

/**
 * The CA set from --ca-dir (generated pairs are staged with the other files), or from the Cluster's
 * Secrets in the management cluster (generated ones are created there, as CAPI does, and kept even
 * when the run fails later: the next run uses them).
 */
async function certificateAuthorities(
  opts: KubeadmModeOptions,
  deps: KubeadmModeDeps,
  assignments: readonly Assignment[],
  now: Date,
): Promise<{
  authorities: CertificateAuthorities
  toWrite: StagedFile[]
  ca?: ModeSetup['ca']
  caSecrets?: ModeSetup['caSecrets']
}> {
  const generate = assignments.some((a) => a.role === 'init')
  const kubeconfig = opts.managementKubeconfig
  if (kubeconfig === undefined) {
    const { authorities, toWrite } = await loadOrCreateAuthorities(opts.caDir, { generate, now })
    const ca = { dir: path.resolve(opts.caDir), filesCreated: toWrite.map((f) => f.file) }
    return { authorities, toWrite, ca }
  }
  if (!deps.managementApi) throw new Error('kubeadmMode: managementKubeconfig given without managementApi')
  const cluster = onlyCluster(assignments)
  const namespace = cluster.metadata.namespace ?? 'default'
  const api = await deps.managementApi(kubeconfig)
  const { authorities, created } = await loadOrCreateCaSecrets(api, {
    namespace,
    cluster: cluster.metadata.name,
    generate,
    now,
  })
  return { authorities, toWrite: [], caSecrets: { namespace, cluster: cluster.metadata.name, created } }
}

/** One run's machines share one CA set: with CAs kept per Cluster, they must share one Cluster. */
function onlyCluster(assignments: readonly Assignment[]): Assignment['cluster'] {
  const key = (c: Assignment['cluster']) => `${c.metadata.namespace ?? 'default'}/${c.metadata.name}`
  const clusters = [...new Map(assignments.map((a) => [key(a.cluster), a.cluster])).values()]
  const [first] = clusters
  if (!first) throw new Error('kubeadmMode: no machine to generate for')
  if (clusters.length > 1)
    throw new CliError(
      `the machines to generate for belong to ${clusters.length} Clusters (${clusters.map(key).join(', ')}); their CAs are kept per Cluster in the management cluster`,
      { hint: 'generate for one Cluster at a time (--machine, or one Cluster per input file)' },
    )
  return first
}

interface KubeadmContext {
  authorities: CertificateAuthorities
  token: BootstrapToken | undefined
  caCertHashes: string[]
  secrets: BootstrapObjects['secrets']
}

function planFor(a: Assignment, ctx: KubeadmContext): BootstrapPlan {
  const { authorities, secrets } = ctx
  if (a.role === 'init') return kubeadmPlan({ ...a, authorities, secrets })
  const apiServerEndpoint = controlPlaneEndpoint(a.cluster)
  if (!apiServerEndpoint && !usesFileDiscovery(a.spec)) {
    throw new CliError(
      `${a.cluster.origin.file}:${a.cluster.origin.line ?? 1}: Cluster "${a.cluster.metadata.name}": spec.controlPlaneEndpoint (host and port) is required for join data`,
    )
  }
  const discovery = {
    apiServerEndpoint: apiServerEndpoint ?? '',
    token: ctx.token ? tokenString(ctx.token) : '',
    caCertHashes: ctx.caCertHashes,
  }
  return kubeadmPlan({ ...a, authorities, discovery, secrets })
}

/** Written once, beside the output; an existing one is kept (it may be in use). */
async function adminKubeconfig(
  cas: CertificateAuthorities,
  init: Assignment,
  outDir: string,
  now: Date,
): Promise<{ file: string; staged?: StagedFile } | undefined> {
  const name = init.cluster.metadata.name
  const file = path.join(outDir, `${name}.kubeconfig`)
  if (await exists(file)) return { file }
  const endpoint = controlPlaneEndpoint(init.cluster)
  if (!endpoint) return undefined
  const content = createAdminKubeconfig(cas.ca, name, `https://${endpoint}`, now)
  return { file, staged: { file, content, secret: true } }
}
