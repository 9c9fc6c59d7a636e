/**
 * Kubeadm mode: the CA set (loaded, or generated in memory for init), the admin kubeconfig, the
 * bootstrap token and each machine's kubeadm plan. Files are staged, not written.
 */
import path from 'node:path'
import { CliError } from '../errors/index.js'
import { exists } from '../system/index.js'
import { caCertHash, loadOrCreateAuthorities } from './certs.js'
import { controlPlaneEndpoint, givenJoinToken, usesFileDiscovery } from './defaults.js'
import type { GenerateDeps } from './generate.js'
import { createAdminKubeconfig } from './kubeconfig.js'
import type { ModeSetup } from './machine-job.js'
import type { Assignment } from './orchestrate.js'
import { kubeadmPlan } from './plan.js'
import type { StagedFile } from './staged-writes.js'
import { generateBootstrapToken, tokenString, type BootstrapToken } from '../kube/index.js'
import type { BootstrapObjects, BootstrapPlan, CertificateAuthorities } from './types.js'

export async function kubeadmMode(
  opts: { caDir: string; outDir: string; tokenTtlMs: number },
  deps: Pick<GenerateDeps, 'now' | 'randomBytes'>,
  objects: BootstrapObjects,
  assignments: readonly Assignment[],
): Promise<ModeSetup> {
  const now = deps.now()
  const init = assignments.find((a) => a.role === 'init')
  const { authorities, toWrite } = await loadOrCreateAuthorities(opts.caDir, { generate: !!init, now })
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
    ca: { dir: path.resolve(opts.caDir), filesCreated: toWrite.map((f) => f.file) },
    adminKubeconfig: kubeconfig?.file,
  }
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
  return { file, staged: { file, content, mode: 0o600 } }
}
