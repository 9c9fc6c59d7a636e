/**
 * Cluster API's objects in the Kubernetes API contract fake (a TEST DOUBLE): the CRDs of clusters,
 * machines and kubeadmconfigs with their status subresource, and a small cluster (two control planes
 * and a worker) as CAPI core and an infrastructure provider would have created it. The test plays
 * those controllers: it sets infrastructureReady, ControlPlaneInitialized and nodeRefs itself.
 */
import { randomUUID } from 'node:crypto'
import type { FakeApiServer } from '../../src/lib/simulator/index.js'
import type { KubeObject } from '../../src/lib/simulator/fake-apiserver.js'

const CRDS = [
  { group: 'cluster.x-k8s.io', plural: 'clusters', kind: 'Cluster' },
  { group: 'cluster.x-k8s.io', plural: 'machines', kind: 'Machine' },
  { group: 'bootstrap.cluster.x-k8s.io', plural: 'kubeadmconfigs', kind: 'KubeadmConfig' },
]
export type CapiVersion = 'v1beta1' | 'v1beta2'
export const capi = (v: CapiVersion = 'v1beta1') => `cluster.x-k8s.io/${v}`
export const bootstrap = (v: CapiVersion = 'v1beta1') => `bootstrap.cluster.x-k8s.io/${v}`
export const CAPI = capi()
export const BOOTSTRAP = bootstrap()
export const NS = 'capi-test'
export const CLUSTER = 'demo'

export function installCapiCrds(api: FakeApiServer): void {
  for (const c of CRDS)
    api.put('apiextensions.k8s.io/v1', 'customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${c.plural}.${c.group}` },
      spec: {
        group: c.group,
        scope: 'Namespaced',
        names: { plural: c.plural, kind: c.kind, singular: c.kind.toLowerCase() },
        versions: ['v1beta1', 'v1beta2'].map((name) => ({
          name,
          served: true,
          storage: name === 'v1beta1',
          subresources: { status: {} },
        })),
      },
    })
}

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: NS,
  uid: randomUUID(),
  ...extra,
})

export interface MachineSpec {
  name: string
  controlPlane: boolean
  /** The KubeadmConfig spec of this machine. */
  config: Record<string, unknown>
}

export const CLUSTER_MACHINES: MachineSpec[] = [
  {
    name: 'cp-0',
    controlPlane: true,
    config: {
      clusterConfiguration: { apiServer: { certSANs: ['cp.example'] } },
      initConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'tier=cp' } } },
      format: 'cloud-config',
    },
  },
  { name: 'cp-1', controlPlane: true, config: { joinConfiguration: { controlPlane: {} } } },
  { name: 'worker-0', controlPlane: false, config: { joinConfiguration: {}, format: 'ignition' } },
]

/** The Cluster, its workload kubeconfig Secret, and per machine a Machine and its owned KubeadmConfig. */
export function seedCluster(
  api: FakeApiServer,
  workloadKubeconfig: string,
  machines = CLUSTER_MACHINES,
  version: CapiVersion = 'v1beta1',
): void {
  const CAPI = capi(version)
  const BOOTSTRAP = bootstrap(version)
  api.put('v1', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  api.put(CAPI, 'clusters', {
    apiVersion: CAPI,
    kind: 'Cluster',
    metadata: meta(CLUSTER),
    spec: {
      controlPlaneEndpoint: { host: '10.0.0.100', port: 6443 },
      clusterNetwork: {
        services: { cidrBlocks: ['10.96.0.0/12'] },
        pods: { cidrBlocks: ['192.168.0.0/16'] },
      },
    },
    status:
      version === 'v1beta1'
        ? { infrastructureReady: false }
        : { initialization: { infrastructureProvisioned: false } },
  })
  api.put('v1', 'secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${CLUSTER}-kubeconfig`, namespace: NS },
    type: 'cluster.x-k8s.io/secret',
    data: { value: Buffer.from(workloadKubeconfig).toString('base64') },
  })
  for (const m of machines) {
    const machine = {
      apiVersion: CAPI,
      kind: 'Machine',
      metadata: meta(m.name, {
        labels: {
          'cluster.x-k8s.io/cluster-name': CLUSTER,
          ...(m.controlPlane ? { 'cluster.x-k8s.io/control-plane': '' } : {}),
        },
      }),
      spec: {
        clusterName: CLUSTER,
        version: 'v1.31.13',
        bootstrap: {
          configRef:
            version === 'v1beta1'
              ? { apiVersion: BOOTSTRAP, kind: 'KubeadmConfig', name: m.name }
              : { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: m.name },
        },
      },
    }
    api.put(CAPI, 'machines', machine)
    const uid = api.get(CAPI, 'machines', m.name, NS)?.metadata.uid
    api.put(BOOTSTRAP, 'kubeadmconfigs', {
      apiVersion: BOOTSTRAP,
      kind: 'KubeadmConfig',
      metadata: meta(m.name, {
        ownerReferences: [{ apiVersion: CAPI, kind: 'Machine', name: m.name, uid, controller: true }],
      }),
      spec: version === 'v1beta1' ? m.config : argLists(m.config),
    })
  }
}

/** v1beta2 writes extraArgs and kubeletExtraArgs as `{name, value}` lists. */
function argLists(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => argLists(v))
  if (typeof value !== 'object' || value === null) return value
  if (key === 'extraArgs' || key === 'kubeletExtraArgs')
    return Object.entries(value).map(([name, v]) => ({ name, value: v as unknown }))
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, argLists(v, k)]))
}

/** What CAPI core's Cluster controller and the infrastructure provider report, merged into the status. */
export function setClusterStatus(
  api: FakeApiServer,
  status: Record<string, unknown>,
  version: CapiVersion = 'v1beta1',
): void {
  const cluster = api.get(capi(version), 'clusters', CLUSTER, NS) as KubeObject
  api.put(capi(version), 'clusters', { ...cluster, status: { ...(cluster.status as object), ...status } })
}

export function setMachineNodeRef(api: FakeApiServer, name: string): void {
  const machine = api.get(CAPI, 'machines', name, NS) as KubeObject
  api.put(CAPI, 'machines', { ...machine, status: { nodeRef: { kind: 'Node', name } } })
}
