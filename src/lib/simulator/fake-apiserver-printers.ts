/**
 * The columns and cells of the FakeApiServer TEST DOUBLE's Table responses, per built-in type, as
 * kube-apiserver's printers make them (kubernetes pkg/printers/internalversion: the column
 * definitions of `AddHandlers` and the `print<Kind>` functions). The server always prints wide;
 * kubectl hides the columns of priority 1 unless `-o wide`. Descriptions are shortened: no client
 * shows them. A type without a printer here gets NAME and AGE (fake-apiserver-tables.ts).
 */
import type { KubeObject } from './fake-apiserver.js'

export interface TableColumn {
  name: string
  type: 'string' | 'integer' | 'date'
  format: string
  description: string
  priority: number
}

export type Cell = string | number | null

export interface Printer {
  columns: TableColumn[]
  /** The row's cells, one per column; `age` renders a timestamp as kube-apiserver does. */
  cells(obj: KubeObject, age: (timestamp: unknown) => string): Cell[]
}

const column = (name: string, description: string, opts: Partial<TableColumn> = {}): TableColumn => ({
  name,
  type: 'string',
  format: '',
  description,
  priority: 0,
  ...opts,
})
export const NAME_COLUMN = column('Name', 'Name must be unique within a namespace.', { format: 'name' })
export const AGE_COLUMN = column('Age', 'CreationTimestamp is the time this object was created.')
const wide = (name: string, description: string) => column(name, description, { priority: 1 })
const integer = (name: string, description: string) => column(name, description, { type: 'integer' })

type Json = Record<string, unknown>
const map = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {}
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(map) : [])
const num = (v: unknown): number => (typeof v === 'number' ? v : 0)
const str = (v: unknown): string => (typeof v === 'string' ? v : '')
const spec = (o: KubeObject) => map(o.spec)
const status = (o: KubeObject) => map(o.status)
const orNone = (s: string) => s || '<none>'

/** labels.FormatLabels: sorted `k=v`, or <none>. */
function formatLabels(labels: unknown): string {
  const entries = Object.entries(map(labels)).sort(([a], [b]) => (a < b ? -1 : 1))
  return entries.length === 0 ? '<none>' : entries.map(([k, v]) => `${k}=${str(v)}`).join(',')
}

/** metav1.LabelSelectorAsSelector(…).String(): requirements sorted by key. */
function formatSelector(selector: unknown): string {
  const s = map(selector)
  const reqs: Array<[string, string]> = Object.entries(map(s.matchLabels)).map(([k, v]) => [
    k,
    `${k}=${str(v)}`,
  ])
  for (const e of list(s.matchExpressions)) {
    const key = str(e.key)
    const values = (Array.isArray(e.values) ? e.values.map(str) : []).sort().join(',')
    const op = str(e.operator)
    const text =
      op === 'In'
        ? `${key} in (${values})`
        : op === 'NotIn'
          ? `${key} notin (${values})`
          : op === 'Exists'
            ? key
            : `!${key}`
    reqs.push([key, text])
  }
  return reqs
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, text]) => text)
    .join(',')
}

/** layoutContainerCells: container names, and images, comma-separated. */
function containerCells(template: unknown): [string, string] {
  const containers = list(map(map(template).spec).containers)
  return [containers.map((c) => str(c.name)).join(','), containers.map((c) => str(c.image)).join(',')]
}

const templateColumns = [
  wide('Containers', 'Names of each container in the template.'),
  wide('Images', 'Images referenced by each container in the template.'),
]
const selectorColumn = wide('Selector', 'Label query over the pods.')

const node: Printer = {
  columns: [
    NAME_COLUMN,
    column('Status', 'The status of the node'),
    column('Roles', 'The roles of the node'),
    AGE_COLUMN,
    column('Version', 'Kubelet Version reported by the node.'),
    wide('Internal-IP', 'List of addresses reachable to the node.'),
    wide('External-IP', 'List of addresses reachable to the node.'),
    wide('OS-Image', 'OS Image reported by the node.'),
    wide('Kernel-Version', 'Kernel Version reported by the node.'),
    wide('Container-Runtime', 'ContainerRuntime Version reported by the node.'),
  ],
  cells(n, age) {
    const s = status(n)
    const ready = list(s.conditions).find((c) => c.type === 'Ready')
    const states = ready ? [ready.status === 'True' ? 'Ready' : 'NotReady'] : ['Unknown']
    if (spec(n).unschedulable === true) states.push('SchedulingDisabled')
    const roles = new Set<string>()
    for (const [k, v] of Object.entries(n.metadata.labels ?? {})) {
      if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length)
        roles.add(k.slice('node-role.kubernetes.io/'.length))
      else if (k === 'kubernetes.io/role' && v !== '') roles.add(v)
    }
    const address = (type: string) => orNone(str(list(s.addresses).find((a) => a.type === type)?.address))
    const info = map(s.nodeInfo)
    const orUnknown = (v: unknown) => str(v) || '<unknown>'
    return [
      n.metadata.name,
      states.join(','),
      [...roles].sort().join(',') || '<none>',
      age(n.metadata.creationTimestamp),
      str(info.kubeletVersion),
      address('InternalIP'),
      address('ExternalIP'),
      orUnknown(info.osImage),
      orUnknown(info.kernelVersion),
      orUnknown(info.containerRuntimeVersion),
    ]
  },
}

const namespace: Printer = {
  columns: [NAME_COLUMN, column('Status', 'The status of the namespace'), AGE_COLUMN],
  cells: (ns, age) => [ns.metadata.name, str(status(ns).phase), age(ns.metadata.creationTimestamp)],
}

/** printPod for pods without init containers: the fake runs none. */
const pod: Printer = {
  columns: [
    NAME_COLUMN,
    column('Ready', 'The aggregate readiness state of this pod for accepting traffic.'),
    column('Status', 'The aggregate status of the containers in this pod.'),
    column('Restarts', 'The number of times the containers in this pod have been restarted.'),
    AGE_COLUMN,
    wide('IP', 'IP address allocated to the pod.'),
    wide('Node', 'NodeName is the node the pod is scheduled onto.'),
    wide('Nominated Node', 'The node the scheduler nominated for this pod.'),
    wide('Readiness Gates', 'Conditions evaluated for pod readiness.'),
  ],
  cells(p, age) {
    const s = status(p)
    let reason = str(s.reason) || str(s.phase)
    let restarts = 0
    let ready = 0
    let running = false
    for (const c of list(s.containerStatuses).reverse()) {
      restarts += num(c.restartCount)
      const state = map(c.state)
      const waiting = map(state.waiting)
      const terminated = state.terminated === undefined ? undefined : map(state.terminated)
      if (str(waiting.reason)) reason = str(waiting.reason)
      else if (terminated && str(terminated.reason)) reason = str(terminated.reason)
      else if (terminated)
        reason = num(terminated.signal)
          ? `Signal:${num(terminated.signal)}`
          : `ExitCode:${num(terminated.exitCode)}`
      else if (c.ready === true && state.running !== undefined) {
        running = true
        ready++
      }
    }
    const conditions = list(s.conditions)
    if (reason === 'Completed' && running)
      reason = conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady'
    if (p.metadata.deletionTimestamp && s.reason === 'NodeLost') reason = 'Unknown'
    else if (p.metadata.deletionTimestamp && s.phase !== 'Succeeded' && s.phase !== 'Failed')
      reason = 'Terminating'
    const gates = list(spec(p).readinessGates)
    const gatesTrue = gates.filter((g) =>
      conditions.some((c) => c.type === g.conditionType && c.status === 'True'),
    ).length
    return [
      p.metadata.name,
      `${ready}/${list(spec(p).containers).length}`,
      reason,
      String(restarts),
      age(p.metadata.creationTimestamp),
      orNone(str(list(s.podIPs)[0]?.ip) || str(s.podIP)),
      orNone(str(spec(p).nodeName)),
      orNone(str(s.nominatedNodeName)),
      gates.length === 0 ? '<none>' : `${gatesTrue}/${gates.length}`,
    ]
  },
}

/** getServiceExternalIP for the service types. */
function externalIp(svc: KubeObject): string {
  const s = spec(svc)
  const external = Array.isArray(s.externalIPs) ? s.externalIPs.map(str) : []
  switch (s.type) {
    case 'LoadBalancer': {
      const ingress = list(map(status(svc).loadBalancer).ingress).map((i) => str(i.ip) || str(i.hostname))
      const all = [...ingress, ...external].filter(Boolean)
      return all.length > 0 ? all.join(',') : '<pending>'
    }
    case 'ExternalName':
      return str(s.externalName)
    default:
      return external.length > 0 ? external.join(',') : '<none>'
  }
}

const service: Printer = {
  columns: [
    NAME_COLUMN,
    column('Type', 'The type of the service.'),
    column('Cluster-IP', 'The IP address of the service.'),
    column('External-IP', 'External IP addresses of the service.'),
    column('Port(s)', 'The ports exposed by the service.'),
    AGE_COLUMN,
    wide('Selector', 'Route service traffic to pods with label keys and values matching this selector.'),
  ],
  cells(svc, age) {
    const s = spec(svc)
    const ports = list(s.ports).map((p) =>
      num(p.nodePort) > 0
        ? `${num(p.port)}:${num(p.nodePort)}/${str(p.protocol) || 'TCP'}`
        : `${num(p.port)}/${str(p.protocol) || 'TCP'}`,
    )
    const clusterIps = Array.isArray(s.clusterIPs) ? s.clusterIPs.map(str) : []
    return [
      svc.metadata.name,
      str(s.type),
      clusterIps[0] || '<none>',
      externalIp(svc),
      ports.join(',') || '<none>',
      age(svc.metadata.creationTimestamp),
      formatLabels(s.selector),
    ]
  },
}

const deployment: Printer = {
  columns: [
    NAME_COLUMN,
    column('Ready', 'Number of the pod with ready state'),
    column('Up-to-date', 'Total number of non-terminated pods with the desired template spec.'),
    column('Available', 'Total number of available pods.'),
    AGE_COLUMN,
    ...templateColumns,
    selectorColumn,
  ],
  cells(d, age) {
    const s = status(d)
    return [
      d.metadata.name,
      `${num(s.readyReplicas)}/${num(spec(d).replicas)}`,
      num(s.updatedReplicas),
      num(s.availableReplicas),
      age(d.metadata.creationTimestamp),
      ...containerCells(spec(d).template),
      formatSelector(spec(d).selector),
    ]
  },
}

const replicaSet: Printer = {
  columns: [
    NAME_COLUMN,
    integer('Desired', 'Number of desired pods.'),
    integer('Current', 'The most recently observed number of replicas.'),
    integer('Ready', 'The number of ready replicas.'),
    AGE_COLUMN,
    ...templateColumns,
    selectorColumn,
  ],
  cells: (rs, age) => [
    rs.metadata.name,
    num(spec(rs).replicas),
    num(status(rs).replicas),
    num(status(rs).readyReplicas),
    age(rs.metadata.creationTimestamp),
    ...containerCells(spec(rs).template),
    formatSelector(spec(rs).selector),
  ],
}

const daemonSet: Printer = {
  columns: [
    NAME_COLUMN,
    integer('Desired', 'The total number of nodes that should be running the daemon pod.'),
    integer('Current', 'The number of nodes running at least one daemon pod.'),
    integer('Ready', 'The number of nodes with a ready daemon pod.'),
    integer('Up-to-date', 'The number of nodes running the updated daemon pod.'),
    integer('Available', 'The number of nodes with an available daemon pod.'),
    column('Node Selector', 'The node labels the pods must match.'),
    AGE_COLUMN,
    ...templateColumns,
    selectorColumn,
  ],
  cells(ds, age) {
    const s = status(ds)
    const template = spec(ds).template
    return [
      ds.metadata.name,
      num(s.desiredNumberScheduled),
      num(s.currentNumberScheduled),
      num(s.numberReady),
      num(s.updatedNumberScheduled),
      num(s.numberAvailable),
      formatLabels(map(map(template).spec).nodeSelector),
      age(ds.metadata.creationTimestamp),
      ...containerCells(template),
      formatSelector(spec(ds).selector),
    ]
  },
}

const statefulSet: Printer = {
  columns: [
    NAME_COLUMN,
    column('Ready', 'Number of the pod with ready state'),
    AGE_COLUMN,
    ...templateColumns,
  ],
  cells: (sts, age) => [
    sts.metadata.name,
    `${num(status(sts).readyReplicas)}/${num(spec(sts).replicas)}`,
    age(sts.metadata.creationTimestamp),
    ...containerCells(spec(sts).template),
  ],
}

const configMap: Printer = {
  columns: [NAME_COLUMN, column('Data', 'Data contains the configuration data.'), AGE_COLUMN],
  cells: (cm, age) => [
    cm.metadata.name,
    Object.keys(map(cm.data)).length + Object.keys(map(cm.binaryData)).length,
    age(cm.metadata.creationTimestamp),
  ],
}

const secret: Printer = {
  columns: [
    NAME_COLUMN,
    column('Type', 'Used to facilitate programmatic handling of secret data.'),
    column('Data', 'Data contains the secret data.'),
    AGE_COLUMN,
  ],
  cells: (s, age) => [
    s.metadata.name,
    str(s.type),
    Object.keys(map(s.data)).length,
    age(s.metadata.creationTimestamp),
  ],
}

const lease: Printer = {
  columns: [NAME_COLUMN, column('Holder', 'The identity of the holder of a current lease.'), AGE_COLUMN],
  cells: (l, age) => [l.metadata.name, str(spec(l).holderIdentity), age(l.metadata.creationTimestamp)],
}

/** By `<apiVersion>|<resource>`. */
export const PRINTERS: Record<string, Printer> = {
  'v1|nodes': node,
  'v1|namespaces': namespace,
  'v1|pods': pod,
  'v1|services': service,
  'v1|configmaps': configMap,
  'v1|secrets': secret,
  'apps/v1|deployments': deployment,
  'apps/v1|replicasets': replicaSet,
  'apps/v1|daemonsets': daemonSet,
  'apps/v1|statefulsets': statefulSet,
  'coordination.k8s.io/v1|leases': lease,
}
