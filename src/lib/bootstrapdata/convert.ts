/**
 * Cluster API objects of every apiVersion this tool reads, turned into the internal (v1beta1) shape
 * the rest of the code uses, the way CAPI's conversion webhooks do, for the fields this tool reads
 * (capi.md §1.6). Pure: a converted copy plus the problems, with key paths into the input object.
 *
 * - v1alpha3 Cluster: `status.controlPlaneInitialized: true` → condition ControlPlaneInitialized True
 *   (CAPI's ConvertTo marks it true; `status.infrastructureReady` is the same field in every version).
 * - v1alpha3 Machine: `spec.clusterName` may be missing; the label cluster.x-k8s.io/cluster-name
 *   names the Cluster then (as the v1alpha2 → v1alpha3 conversion did).
 * - v1beta2 Cluster: `status.initialization.infrastructureProvisioned` → `status.infrastructureReady`,
 *   `status.initialization.controlPlaneInitialized: true` → condition ControlPlaneInitialized True;
 *   the (metav1) conditions pass through, InfrastructureReady among them; `status.deprecated` (the
 *   v1beta1 conditions) is dropped.
 * - v1beta2 Machine: `bootstrap.configRef` is {apiGroup, kind, name}; kind and name read the same.
 * - KubeadmConfig(Template) specs: convert-spec.ts.
 * - Objects of the infrastructure.cluster.x-k8s.io group (DockerCluster, AWSMachine, …) are opaque
 *   references: accepted, and ignored.
 */
import type { KeyPath, Problem } from '../yaml/index.js'
import { convertSpec } from './convert-spec.js'
import { record } from './validate.js'
import { CAPI_VERSIONS, CLUSTER_NAME_LABEL, type CapiVersion } from './types.js'

export const OBJECT_KINDS = [
  'Cluster',
  'Machine',
  'KubeadmConfig',
  'KubeadmConfigTemplate',
  'Secret',
] as const
export type ObjectKind = (typeof OBJECT_KINDS)[number]

export const INFRASTRUCTURE_GROUP = 'infrastructure.cluster.x-k8s.io'
export const CONTROL_PLANE_INITIALIZED = 'ControlPlaneInitialized'

const GROUPS: Record<ObjectKind, string | undefined> = {
  Cluster: 'cluster.x-k8s.io',
  Machine: 'cluster.x-k8s.io',
  KubeadmConfig: 'bootstrap.cluster.x-k8s.io',
  KubeadmConfigTemplate: 'bootstrap.cluster.x-k8s.io',
  Secret: undefined, // the core group: apiVersion "v1"
}

export function supportedApiVersions(kind: ObjectKind): string[] {
  const group = GROUPS[kind]
  return group ? CAPI_VERSIONS.map((v) => `${group}/${v}`) : ['v1']
}

export type Classified =
  | { kind: ObjectKind; version: CapiVersion | 'v1'; doc: Record<string, unknown> }
  | { ignored: true }
  | { problems: Problem[]; kind?: ObjectKind }

/** Which kind and version a document is, whether it is an ignored infrastructure object, or what is wrong. */
export function classifyObject(doc: Record<string, unknown> | undefined): Classified {
  const apiVersion = doc?.apiVersion
  const kind = doc?.kind
  const group = typeof apiVersion === 'string' ? apiVersion.split('/')[0] : undefined
  if (group === INFRASTRUCTURE_GROUP && typeof kind === 'string' && kind !== '') return { ignored: true }
  if (!doc || typeof kind !== 'string' || !(OBJECT_KINDS as readonly string[]).includes(kind)) {
    return {
      problems: [
        {
          path: doc ? ['kind'] : [],
          message: `expected kind ${OBJECT_KINDS.join(', ')} (or any ${INFRASTRUCTURE_GROUP} kind, which is ignored)`,
        },
      ],
    }
  }
  const known = kind as ObjectKind
  const supported = supportedApiVersions(known)
  if (typeof apiVersion !== 'string' || !supported.includes(apiVersion)) {
    const what =
      apiVersion === undefined
        ? 'required key is missing'
        : `${JSON.stringify(apiVersion)} is not a supported apiVersion of ${kind}`
    const message = `${what}; supported: ${supported.join(', ')}`
    return { kind: known, problems: [{ path: ['apiVersion'], message }] }
  }
  const version = apiVersion === 'v1' ? 'v1' : (apiVersion.slice(apiVersion.indexOf('/') + 1) as CapiVersion)
  return { kind: known, version, doc }
}

/** The object in the internal shape (a copy; the input is not changed) and what kept it from converting. */
export function convertObject(
  kind: ObjectKind,
  version: CapiVersion | 'v1',
  input: Record<string, unknown>,
): { doc: Record<string, unknown>; problems: Problem[] } {
  const doc = structuredClone(input)
  const problems: Problem[] = []
  if (version === 'v1') return { doc, problems }
  switch (kind) {
    case 'Cluster':
      if (record(doc.status)) doc.status = clusterStatus(version, record(doc.status) ?? {}, problems)
      break
    case 'Machine':
      if (version === 'v1alpha3') machineClusterName(doc, problems)
      break
    case 'KubeadmConfig':
      if (doc.spec !== undefined) doc.spec = convertSpec(version, doc.spec, ['spec'], problems)
      break
    case 'KubeadmConfigTemplate': {
      const template = record(record(doc.spec)?.template)
      if (template?.spec !== undefined)
        template.spec = convertSpec(version, template.spec, ['spec', 'template', 'spec'], problems)
      break
    }
    default:
      break
  }
  return { doc, problems }
}

function clusterStatus(
  version: CapiVersion,
  status: Record<string, unknown>,
  problems: Problem[],
): Record<string, unknown> {
  const at: KeyPath = ['status']
  if (version === 'v1alpha3') {
    const { controlPlaneInitialized: initialized, ...rest } = status
    if (!isOptionalBoolean(initialized, [...at, 'controlPlaneInitialized'], problems)) return status
    return initialized === true
      ? { ...rest, conditions: markTrue(rest.conditions, CONTROL_PLANE_INITIALIZED) }
      : rest
  }
  if (version !== 'v1beta2') return status
  const { initialization, deprecated: _v1beta1Conditions, ...rest } = status
  if (initialization === undefined) return rest
  const init = record(initialization)
  if (!init) {
    problems.push({ path: [...at, 'initialization'], message: 'must be an object' })
    return status
  }
  const provisioned = init.infrastructureProvisioned
  const initialized = init.controlPlaneInitialized
  const ok =
    isOptionalBoolean(provisioned, [...at, 'initialization', 'infrastructureProvisioned'], problems) &&
    isOptionalBoolean(initialized, [...at, 'initialization', 'controlPlaneInitialized'], problems)
  if (!ok) return status
  const out: Record<string, unknown> = { ...rest }
  if (provisioned !== undefined) out.infrastructureReady = provisioned
  if (initialized === true) out.conditions = markTrue(out.conditions, CONTROL_PLANE_INITIALIZED)
  return out
}

/** CAPI's conditions.MarkTrue: the condition of that type becomes True, or is added. */
function markTrue(conditions: unknown, type: string): unknown {
  if (conditions !== undefined && !Array.isArray(conditions)) return conditions // the schema says what is wrong
  const list = (conditions ?? []) as unknown[]
  const found = list.some((c) => record(c)?.type === type)
  return found
    ? list.map((c) => (record(c)?.type === type ? { ...record(c), status: 'True' } : c))
    : [...list, { type, status: 'True' }]
}

function machineClusterName(doc: Record<string, unknown>, problems: Problem[]): void {
  const spec = record(doc.spec)
  if (!spec || (spec.clusterName !== undefined && spec.clusterName !== '')) return
  const label = record(record(doc.metadata)?.labels)?.[CLUSTER_NAME_LABEL]
  if (typeof label === 'string' && label !== '') {
    spec.clusterName = label
    return
  }
  problems.push({
    path: ['spec', 'clusterName'],
    message: `required: a v1alpha3 Machine names its Cluster in spec.clusterName or in the label ${CLUSTER_NAME_LABEL}, and neither is set`,
  })
}

function isOptionalBoolean(value: unknown, path: KeyPath, problems: Problem[]): boolean {
  if (value === undefined || typeof value === 'boolean') return true
  problems.push({ path, message: 'must be boolean' })
  return false
}
