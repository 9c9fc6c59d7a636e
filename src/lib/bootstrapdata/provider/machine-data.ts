/**
 * What the provider renders for one machine: its objects read back from the management cluster as
 * one multi-document input (so they pass the same checks and conversion as files do), and the data
 * document for an assignment.
 */
import { stringifyYaml } from '../../yaml/index.js'
import { tokenString, type BootstrapToken, type KubeObject } from '../../kube/index.js'
import { caCertHash } from '../certs.js'
import { renderCloudConfig } from '../cloud-init.js'
import { controlPlaneEndpoint } from '../defaults.js'
import { renderIgnition } from '../ignition.js'
import { parseBootstrapObjects } from '../parse.js'
import { kubeadmPlan } from '../plan.js'
import type { Assignment } from '../orchestrate.js'
import type { BootstrapTemplates } from '../templates.js'
import type { BootstrapObjects, CertificateAuthorities } from '../types.js'
import type { CapiApi } from './capi-api.js'
import type { CapiCluster, CapiMachine, KubeadmConfigObject } from './capi-objects.js'

export interface MachineObjects {
  config: KubeadmConfigObject
  machine: CapiMachine
  cluster: CapiCluster
}

export async function readObjects(o: MachineObjects, api: CapiApi): Promise<BootstrapObjects> {
  const { namespace = 'default', name } = o.config.metadata
  return parseBootstrapObjects(
    await inputYaml(o, api),
    `KubeadmConfig ${namespace}/${name} (as read from the API)`,
  )
}

/** The user data of an assignment; `token` is the join token (none for init or a given token). */
export function renderData(
  a: Assignment,
  objects: BootstrapObjects,
  authorities: CertificateAuthorities,
  token: BootstrapToken | undefined,
  templates: BootstrapTemplates,
  format: string = a.spec.format ?? 'cloud-config',
): { value: string; format: string } {
  const discovery =
    a.role === 'init'
      ? undefined
      : {
          apiServerEndpoint: controlPlaneEndpoint(a.cluster) ?? '',
          token: token ? tokenString(token) : '',
          caCertHashes: [caCertHash(authorities.ca.certPem)],
        }
  const plan = kubeadmPlan({ ...a, authorities, discovery, secrets: objects.secrets })
  const value = format === 'ignition' ? renderIgnition(plan, templates) : renderCloudConfig(plan)
  return { value, format }
}

/** The objects as one multi-document input, so they pass the same checks and conversion as files. */
async function inputYaml({ config, machine, cluster }: MachineObjects, api: CapiApi): Promise<string> {
  const spec = config.spec ?? {}
  const names = new Set<string>()
  for (const f of (spec.files as Array<{ contentFrom?: { secret?: { name?: string } } }> | undefined) ?? [])
    if (f.contentFrom?.secret?.name) names.add(f.contentFrom.secret.name)
  for (const u of (spec.users as Array<{ passwdFrom?: { secret?: { name?: string } } }> | undefined) ?? [])
    if (u.passwdFrom?.secret?.name) names.add(u.passwdFrom.secret.name)
  const namespace = config.metadata.namespace ?? 'default'
  const secrets: object[] = []
  const missing: string[] = []
  for (const name of names) {
    const s = await api.getSecret(namespace, name)
    if (s)
      secrets.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, stringData: s.data })
    else missing.push(`${namespace}/${name}`)
  }
  if (missing.length > 0)
    throw new Error(
      `the Secrets ${missing.join(', ')} that spec.files[].contentFrom or spec.users[].passwdFrom name do not exist in the management cluster`,
    )
  const strip = (o: KubeObject) => ({
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: {
      name: o.metadata.name,
      namespace: o.metadata.namespace,
      labels: o.metadata.labels,
      annotations: o.metadata.annotations,
    },
    spec: o.spec,
    status: o.status,
  })
  const m = strip(machine)
  // The Machine's configRef names this config; the status of a config is ours, not input.
  const c = { ...strip(config), status: undefined }
  return [strip(cluster), m, c, ...secrets].map((d) => stringifyYaml(d)).join('---\n')
}
