/**
 * Kubeadm mode: the CA set (loaded, or generated in memory for init), the admin kubeconfig, the
 * bootstrap token and each machine's kubeadm plan. Files are staged, not written.
 */
import path from 'node:path'
import { CliError } from '../errors/index.js'
import { caCertHash, loadOrCreateAuthorities } from './certs.js'
import { controlPlaneEndpoint, givenJoinToken, usesFileDiscovery } from './defaults.js'
import type { GenerateDeps, GenerateResult } from './generate.js'
import { createAdminKubeconfig } from './kubeconfig.js'
import type { Assignment } from './orchestrate.js'
import { kubeadmPlan } from './plan.js'
import type { StagedFile } from './staged-writes.js'
import { exists } from './targets.js'
import { generateBootstrapToken, tokenString } from './tokens.js'
import type { BootstrapObjects, BootstrapPlan, BootstrapToken, CertificateAuthorities } from './types.js'

export async function kubeadmPlans(
  opts: { caDir: string; outDir: string; tokenTtlMs: number },
  deps: Pick<GenerateDeps, 'now' | 'randomBytes'>,
  objects: BootstrapObjects,
  assignments: Assignment[],
  result: Pick<GenerateResult, 'caDir' | 'caFilesCreated' | 'adminKubeconfig'>,
  staged: StagedFile[],
): Promise<{ plans: BootstrapPlan[]; token?: BootstrapToken }> {
  const now = deps.now()
  const hasInit = assignments.some((a) => a.role === 'init')
  const caDir = opts.caDir
  const { authorities, toWrite } = await loadOrCreateAuthorities(caDir, { generate: hasInit, now })
  result.caDir = path.resolve(caDir)
  result.caFilesCreated = toWrite.map((f) => f.file)
  staged.push(...toWrite)
  const init = assignments.find((a) => a.role === 'init')
  if (init) result.adminKubeconfig = await adminKubeconfig(authorities, init, opts.outDir, now, staged)
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

/** Written once, beside the output; an existing one is kept (it may be in use). */
async function adminKubeconfig(
  cas: CertificateAuthorities,
  init: Assignment,
  outDir: string,
  now: Date,
  staged: StagedFile[],
): Promise<string | undefined> {
  const name = init.cluster.metadata.name
  const file = path.join(outDir, `${name}.kubeconfig`)
  if (await exists(file)) return file
  const endpoint = controlPlaneEndpoint(init.cluster)
  if (!endpoint) return undefined
  const content = createAdminKubeconfig(cas.ca, name, `https://${endpoint}`, now)
  staged.push({ file, content, mode: 0o600 })
  return file
}
