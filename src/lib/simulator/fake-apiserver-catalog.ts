/**
 * What the FakeApiServer TEST DOUBLE serves, as the discovery documents describe it to clients
 * (kubectl, helm, client-node): the built-in resources the tool and the pinned charts use, plus the
 * resources each stored CustomResourceDefinition registers, as the real API server does.
 */
export interface ResourceType {
  group: string
  version: string
  /** Plural, lower case: the path segment. */
  resource: string
  kind: string
  namespaced: boolean
  shortNames?: string[]
  /** A CRD version with `subresources.status`: writes to the object keep its status, as the real server does. */
  statusSubresource?: boolean
  /** Groups `kubectl get <category>` expands to (`all`: the workloads and services). */
  categories?: string[]
  /** Only `create`: a review the server answers and never stores (SelfSubjectReview). */
  createOnly?: boolean
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']

interface TypeOptions {
  namespaced?: boolean
  shortNames?: string[]
  categories?: string[]
  createOnly?: boolean
}

/** A built-in type; short names and categories are the real server's, as its discovery lists them. */
const grouped =
  (group: string, version = 'v1') =>
  (resource: string, kind: string, opts: TypeOptions = {}): ResourceType => ({
    group,
    version,
    resource,
    kind,
    namespaced: opts.namespaced ?? true,
    ...(opts.shortNames ? { shortNames: opts.shortNames } : {}),
    ...(opts.categories ? { categories: opts.categories } : {}),
    ...(opts.createOnly ? { createOnly: true } : {}),
  })
const core = grouped('')
const apps = grouped('apps')
const batch = grouped('batch')
const rbac = grouped('rbac.authorization.k8s.io')
const all = ['all']
const clusterScoped = { namespaced: false }

export const BUILT_IN_TYPES: readonly ResourceType[] = [
  core('namespaces', 'Namespace', { ...clusterScoped, shortNames: ['ns'] }),
  core('nodes', 'Node', { ...clusterScoped, shortNames: ['no'] }),
  core('configmaps', 'ConfigMap', { shortNames: ['cm'] }),
  core('secrets', 'Secret'),
  core('services', 'Service', { shortNames: ['svc'], categories: all }),
  core('serviceaccounts', 'ServiceAccount', { shortNames: ['sa'] }),
  core('pods', 'Pod', { shortNames: ['po'], categories: all }),
  core('endpoints', 'Endpoints', { shortNames: ['ep'] }),
  core('events', 'Event', { shortNames: ['ev'] }),
  core('persistentvolumeclaims', 'PersistentVolumeClaim', { shortNames: ['pvc'] }),
  apps('deployments', 'Deployment', { shortNames: ['deploy'], categories: all }),
  apps('daemonsets', 'DaemonSet', { shortNames: ['ds'], categories: all }),
  apps('statefulsets', 'StatefulSet', { shortNames: ['sts'], categories: all }),
  apps('replicasets', 'ReplicaSet', { shortNames: ['rs'], categories: all }),
  batch('jobs', 'Job', { categories: all }),
  batch('cronjobs', 'CronJob', { shortNames: ['cj'], categories: all }),
  rbac('roles', 'Role'),
  rbac('rolebindings', 'RoleBinding'),
  rbac('clusterroles', 'ClusterRole', clusterScoped),
  rbac('clusterrolebindings', 'ClusterRoleBinding', clusterScoped),
  grouped('apiextensions.k8s.io')('customresourcedefinitions', 'CustomResourceDefinition', {
    ...clusterScoped,
    shortNames: ['crd', 'crds'],
  }),
  grouped('authentication.k8s.io')('selfsubjectreviews', 'SelfSubjectReview', {
    ...clusterScoped,
    createOnly: true,
  }),
  grouped('coordination.k8s.io')('leases', 'Lease'),
  grouped('policy')('poddisruptionbudgets', 'PodDisruptionBudget', { shortNames: ['pdb'] }),
  grouped('networking.k8s.io')('networkpolicies', 'NetworkPolicy', { shortNames: ['netpol'] }),
  grouped('admissionregistration.k8s.io')(
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
    clusterScoped,
  ),
  grouped('admissionregistration.k8s.io')(
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
    clusterScoped,
  ),
  grouped('apiregistration.k8s.io')('apiservices', 'APIService', clusterScoped),
  grouped('scheduling.k8s.io')('priorityclasses', 'PriorityClass', { ...clusterScoped, shortNames: ['pc'] }),
  grouped('storage.k8s.io')('storageclasses', 'StorageClass', { ...clusterScoped, shortNames: ['sc'] }),
]

/** The resources a stored CRD adds (every served version). */
export function crdTypes(crd: {
  spec?: {
    group?: string
    scope?: string
    names?: { plural?: string; kind?: string; shortNames?: string[]; categories?: string[] }
    versions?: Array<{ name?: string; served?: boolean; subresources?: { status?: object } }>
  }
}): ResourceType[] {
  const s = crd.spec
  if (!s?.group || !s.names?.plural || !s.names.kind) return []
  return (s.versions ?? [])
    .filter((v) => v.name && v.served !== false)
    .map((v) => ({
      group: s.group ?? '',
      version: v.name ?? '',
      resource: s.names?.plural ?? '',
      kind: s.names?.kind ?? '',
      namespaced: s.scope !== 'Cluster',
      shortNames: s.names?.shortNames,
      ...(s.names?.categories ? { categories: s.names.categories } : {}),
      ...(v.subresources?.status ? { statusSubresource: true } : {}),
    }))
}

export const groupVersionOf = (t: Pick<ResourceType, 'group' | 'version'>) =>
  t.group ? `${t.group}/${t.version}` : t.version

/** GET /api: the legacy core group's versions. */
export function apiVersions(serverAddress: string) {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  }
}

/** GET /apis: every named group and its versions (the first is preferred). */
export function apiGroupList(types: readonly ResourceType[]) {
  const groups = new Map<string, string[]>()
  for (const t of types) {
    if (!t.group) continue
    const versions = groups.get(t.group) ?? []
    if (!versions.includes(t.version)) versions.push(t.version)
    groups.set(t.group, versions)
  }
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([name, versions]) => ({
      name,
      versions: versions.map((version) => ({ groupVersion: `${name}/${version}`, version })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    })),
  }
}

/** GET /api/v1 or /apis/<group>/<version>: its resources with their verbs (undefined: no such group version). */
export function apiResourceList(types: readonly ResourceType[], groupVersion: string) {
  const here = types.filter((t) => groupVersionOf(t) === groupVersion)
  if (here.length === 0) return undefined
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: here.flatMap((t) => [
      {
        name: t.resource,
        singularName: t.kind.toLowerCase(),
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: t.createOnly ? ['create'] : VERBS,
        ...(t.shortNames ? { shortNames: t.shortNames } : {}),
        ...(t.categories ? { categories: t.categories } : {}),
      },
      // kubectl drain looks here for the eviction subresource and the policy version it takes
      ...(t.group === '' && t.resource === 'pods'
        ? [
            {
              name: 'pods/eviction',
              singularName: '',
              namespaced: true,
              group: 'policy',
              version: 'v1',
              kind: 'Eviction',
              verbs: ['create'],
            },
          ]
        : []),
      ...(t.createOnly
        ? []
        : [
            {
              name: `${t.resource}/status`,
              singularName: '',
              namespaced: t.namespaced,
              kind: t.kind,
              verbs: ['get', 'patch', 'update'],
            },
          ]),
    ]),
  }
}

const openApiPath = (t: Pick<ResourceType, 'group' | 'version'>) =>
  t.group ? `apis/${t.group}/${t.version}` : `api/${t.version}`

/** GET /openapi/v3: one entry per group version, each pointing at its document. */
export function openApiV3Root(types: readonly ResourceType[]) {
  const paths: Record<string, { serverRelativeURL: string }> = {}
  for (const t of types)
    paths[openApiPath(t)] = { serverRelativeURL: `/openapi/v3/${openApiPath(t)}?hash=fake` }
  return { paths }
}

/**
 * GET /openapi/v3/<group version>: a schema per kind that accepts any object of it. Clients validate
 * before they send; the fake checks nothing a chart's objects could get wrong beyond names.
 */
export function openApiV3Document(types: readonly ResourceType[], gvPath: string) {
  const here = types.filter((t) => openApiPath(t) === gvPath)
  if (here.length === 0) return undefined
  const schemas: Record<string, unknown> = {}
  for (const t of here)
    schemas[`fake.${t.group || 'core'}.${t.version}.${t.kind}`] = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      'x-kubernetes-group-version-kind': [{ group: t.group, version: t.version, kind: t.kind }],
    }
  // a patch operation per kind that takes fieldValidation: clients then leave validation to the
  // server (which the real one does strictly) instead of downloading schemas to check locally
  const paths: Record<string, unknown> = {}
  for (const t of here) {
    const base = `/${gvPath}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.resource}/{name}`
    paths[base] = {
      patch: {
        parameters: [{ name: 'fieldValidation', in: 'query', schema: { type: 'string' } }],
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: t.group, version: t.version, kind: t.kind },
      },
    }
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes (fake)', version: 'v1.31.13' },
    paths,
    components: { schemas },
  }
}
