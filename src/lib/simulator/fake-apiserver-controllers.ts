/**
 * The controllers of the FakeApiServer TEST DOUBLE: what kube-controller-manager and the kubelets
 * would do after a write, reduced to status. No pods run; a workload is reported ready with all its
 * replicas as soon as the "controller" sees it (a few ms after the write, so watchers see the
 * transition), unless a test keeps it unready. This is what `helm --wait` (helm 3's ready.go looks
 * up the Deployment's newest ReplicaSet; helm 4's kstatus reads observedGeneration, replica counts
 * and conditions), `kubectl rollout status` and `kubectl wait` look at.
 *
 * Also the admission defaults those checks depend on: the real server defaults a Deployment's
 * replicas and rolling-update strategy, a Job's backoffLimit (helm 3 dereferences it), allocates a
 * Service's clusterIP (and defaults its ports' protocol and targetPort), gives a Namespace its name
 * label, finalizer and phase, types a Secret Opaque, and keeps status out of main-resource writes.
 */
import { createHash } from 'node:crypto'
import type { KubeObject } from './fake-apiserver.js'

/** What a controller needs from the server: read, and store as a controller does (events, no admission). */
export interface ControllerHost {
  find(
    apiVersion: string,
    resource: string,
    namespace: string | undefined,
    name: string,
  ): KubeObject | undefined
  listIn(apiVersion: string, resource: string, namespace: string | undefined): KubeObject[]
  store(apiVersion: string, resource: string, obj: KubeObject): KubeObject
}

/** Which workload a fault applies to: by kind (`Deployment`) or resource (`deployments`). */
export interface WorkloadRef {
  kind?: string
  resource?: string
  namespace?: string
  name: string
  /**
   * Held only while the workload's metadata.generation is below this: e.g. 4 holds an installed
   * Deployment through an upgrade (2) and helm's own rollback (3), and lets an explicit rollback
   * (4) become ready.
   */
  untilGeneration?: number
}

/** Resources whose status belongs to a controller: main-resource writes cannot change it. */
const STATUS_OWNED = new Set([
  'deployments',
  'replicasets',
  'daemonsets',
  'statefulsets',
  'jobs',
  'persistentvolumeclaims',
])
const RECONCILE_AFTER_MS = 5

export class WorkloadControllers {
  private readonly unready: WorkloadRef[] = []
  private readonly pending = new Map<string, NodeJS.Timeout>()
  private nextClusterIp = 10

  constructor(readonly host: ControllerHost) {}

  keepUnready(ref: WorkloadRef): void {
    this.unready.push(ref)
    this.touchMatching(ref)
  }

  makeReady(ref: WorkloadRef): void {
    for (let i = this.unready.length - 1; i >= 0; i--)
      if (sameRef(this.unready[i], ref)) this.unready.splice(i, 1)
    this.touchMatching(ref)
  }

  /** Cancels reconciles not yet run (server stopping: no timers may outlive it). */
  stop(): void {
    for (const t of this.pending.values()) clearTimeout(t)
    this.pending.clear()
  }

  /**
   * Admission: the object as the real server would store it after a client's write of `incoming`
   * (create when `existing` is undefined). `subresource` "status" changes status only.
   */
  admit(
    resource: string,
    incoming: KubeObject,
    existing: KubeObject | undefined,
    subresource?: string,
  ): KubeObject {
    if (subresource === 'status' && existing) return { ...existing, status: incoming.status }
    const obj = structuredClone(incoming)
    if (STATUS_OWNED.has(resource)) {
      if (existing?.status !== undefined) obj.status = existing.status
      else delete obj.status
    }
    const spec = (obj.spec ?? {}) as Record<string, unknown>
    switch (resource) {
      case 'deployments':
        spec.replicas ??= 1
        spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } }
        spec.revisionHistoryLimit ??= 10
        spec.progressDeadlineSeconds ??= 600
        break
      case 'daemonsets':
        spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } }
        spec.revisionHistoryLimit ??= 10
        break
      case 'statefulsets':
        spec.replicas ??= 1
        spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { partition: 0 } }
        spec.podManagementPolicy ??= 'OrderedReady'
        spec.revisionHistoryLimit ??= 10
        break
      case 'replicasets':
        spec.replicas ??= 1
        break
      case 'jobs':
        spec.completions ??= 1
        spec.parallelism ??= 1
        spec.backoffLimit ??= 6
        break
      case 'services':
        this.allocateClusterIp(spec, existing)
        if (Array.isArray(spec.ports))
          spec.ports = (spec.ports as Array<Record<string, unknown>>).map((port) => ({
            ...port,
            protocol: port.protocol ?? 'TCP',
            targetPort: port.targetPort ?? port.port,
          }))
        break
      case 'namespaces':
        // the name label and the finalizer every namespace gets; its phase is the server's
        obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name }
        spec.finalizers ??= ['kubernetes']
        obj.status = existing?.status ?? { phase: 'Active' }
        break
      case 'secrets':
        obj.type ??= 'Opaque'
        return obj
      case 'persistentvolumeclaims':
        obj.status ??= { phase: 'Pending' }
        break
      default:
        return obj
    }
    obj.spec = spec
    return obj
  }

  /** Called after every stored write: schedules the controller of that resource, if it has one. */
  written(apiVersion: string, resource: string, obj: KubeObject): void {
    if (!CONTROLLERS[resource] || apiVersion !== API_VERSION[resource]) return
    const key = `${resource}|${obj.metadata.namespace ?? ''}|${obj.metadata.name}`
    if (this.pending.has(key)) return
    const { namespace, name } = obj.metadata
    this.pending.set(
      key,
      setTimeout(() => {
        this.pending.delete(key)
        const current = this.host.find(apiVersion, resource, namespace, name)
        if (current && !current.metadata.deletionTimestamp) CONTROLLERS[resource]?.(this, current)
      }, RECONCILE_AFTER_MS),
    )
  }

  isUnready(resource: string, obj: KubeObject): boolean {
    return this.unready.some(
      (r) =>
        (r.resource === resource || r.kind === obj.kind) &&
        r.name === obj.metadata.name &&
        (r.namespace === undefined || r.namespace === obj.metadata.namespace) &&
        (r.untilGeneration === undefined || Number(obj.metadata.generation ?? 1) < r.untilGeneration),
    )
  }

  /** Stores `status` (and metadata changes) if they differ from what is stored: no event storms. */
  setStatus(
    resource: string,
    obj: KubeObject,
    status: Record<string, unknown>,
    metadata = obj.metadata,
  ): void {
    const next = { ...obj, metadata, status: keepTransitionTimes(status, obj.status) }
    if (JSON.stringify(next) === JSON.stringify(obj)) return
    this.host.store(API_VERSION[resource] ?? '', resource, next)
  }

  private touchMatching(ref: WorkloadRef): void {
    for (const resource of Object.keys(CONTROLLERS))
      for (const obj of this.host.listIn(API_VERSION[resource] ?? '', resource, ref.namespace))
        if ((ref.resource === resource || ref.kind === obj.kind) && obj.metadata.name === ref.name)
          this.written(API_VERSION[resource] ?? '', resource, obj)
  }

  private allocateClusterIp(spec: Record<string, unknown>, existing: KubeObject | undefined): void {
    const before = (existing?.spec ?? {}) as { clusterIP?: string; clusterIPs?: string[] }
    spec.type ??= 'ClusterIP'
    if (spec.type === 'ExternalName') return
    // as the real registry does on update: an omitted clusterIP keeps the allocated one
    if (!spec.clusterIP && before.clusterIP) spec.clusterIP = before.clusterIP
    if (!spec.clusterIP) {
      const n = this.nextClusterIp++
      spec.clusterIP = `10.96.${Math.floor(n / 250)}.${(n % 250) + 1}`
    }
    spec.clusterIPs ??= [spec.clusterIP]
  }
}

const API_VERSION: Record<string, string> = {
  deployments: 'apps/v1',
  replicasets: 'apps/v1',
  daemonsets: 'apps/v1',
  statefulsets: 'apps/v1',
  jobs: 'batch/v1',
  persistentvolumeclaims: 'v1',
}

type Controller = (c: WorkloadControllers, obj: KubeObject) => void

const CONTROLLERS: Record<string, Controller> = {
  deployments: reconcileDeployment,
  replicasets: (c, rs) => {
    // a Deployment's ReplicaSets are kept by the Deployment's controller
    if (controllerOf(rs)?.kind === 'Deployment') return
    const n = replicas(rs)
    const ready = c.isUnready('replicasets', rs) ? 0 : n
    c.setStatus(
      'replicasets',
      rs,
      counts({
        replicas: n,
        fullyLabeledReplicas: n,
        readyReplicas: ready,
        availableReplicas: ready,
        observedGeneration: rs.metadata.generation,
      }),
    )
  },
  daemonsets: (c, ds) => {
    const ready = c.isUnready('daemonsets', ds) ? 0 : 1
    c.setStatus('daemonsets', ds, {
      currentNumberScheduled: 1,
      desiredNumberScheduled: 1,
      numberMisscheduled: 0,
      numberReady: ready,
      ...counts({ updatedNumberScheduled: 1, numberAvailable: ready, numberUnavailable: 1 - ready }),
      observedGeneration: ds.metadata.generation,
    })
  },
  statefulsets: (c, sts) => {
    const n = replicas(sts)
    const ready = c.isUnready('statefulsets', sts) ? 0 : n
    const revision = `${sts.metadata.name}-${podTemplateHash(spec(sts).template)}`
    c.setStatus('statefulsets', sts, {
      replicas: n,
      ...counts({ readyReplicas: ready, currentReplicas: n, updatedReplicas: n, availableReplicas: ready }),
      currentRevision: revision,
      updateRevision: revision,
      collisionCount: 0,
      observedGeneration: sts.metadata.generation,
    })
  },
  jobs: (c, job) => {
    const started = (job.status as { startTime?: string } | undefined)?.startTime ?? now()
    if (c.isUnready('jobs', job)) return c.setStatus('jobs', job, { startTime: started, active: 1, ready: 0 })
    c.setStatus('jobs', job, {
      startTime: started,
      completionTime: now(),
      succeeded: spec(job).completions ?? 1,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
      conditions: [
        condition('SuccessCriteriaMet', 'True', 'CompletionsReached'),
        condition('Complete', 'True', 'CompletionsReached'),
      ],
    })
  },
  persistentvolumeclaims: (c, pvc) => {
    const s = spec(pvc) as { accessModes?: string[]; resources?: { requests?: { storage?: string } } }
    c.setStatus('persistentvolumeclaims', pvc, {
      phase: 'Bound',
      accessModes: s.accessModes ?? ['ReadWriteOnce'],
      capacity: { storage: s.resources?.requests?.storage ?? '1Gi' },
    })
  },
}

/**
 * The deployment controller's visible result: a ReplicaSet per pod template (named and labelled
 * with its pod-template-hash, controlled by the Deployment), the newest scaled to spec.replicas,
 * older ones to 0, and the Deployment's status and revision annotation.
 */
function reconcileDeployment(c: WorkloadControllers, dep: KubeObject): void {
  const host = c.host
  const { namespace, name, uid } = dep.metadata
  const s = spec(dep) as {
    replicas?: number
    template?: { metadata?: { labels?: Record<string, string> } }
    selector?: Selector
  }
  const n = replicas(dep)
  const hash = podTemplateHash(s.template)
  const owned = host
    .listIn('apps/v1', 'replicasets', namespace)
    .filter((rs) => controllerOf(rs)?.uid === uid && uid !== undefined)
  const revisionOf = (rs: KubeObject) => Number(rs.metadata.annotations?.[REVISION] ?? 0)
  const maxRevision = Math.max(0, ...owned.map(revisionOf))
  let current = owned.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash)
  const revision = String(current && revisionOf(current) === maxRevision ? maxRevision : maxRevision + 1)
  const ready = c.isUnready('deployments', dep) ? 0 : n
  const rsStatus = (replicasNow: number, readyNow: number, rs?: KubeObject) => ({
    replicas: replicasNow,
    ...counts({
      fullyLabeledReplicas: replicasNow,
      readyReplicas: readyNow,
      availableReplicas: readyNow,
      observedGeneration: rs?.metadata.generation ?? 1,
    }),
  })
  const annotations = {
    ...current?.metadata.annotations,
    [REVISION]: revision,
    'deployment.kubernetes.io/desired-replicas': String(n),
  }
  if (!current) {
    const labels = { ...s.template?.metadata?.labels, 'pod-template-hash': hash }
    current = host.store('apps/v1', 'replicasets', {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${name}-${hash}`,
        namespace,
        labels,
        annotations,
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name,
            uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        replicas: n,
        selector: { ...s.selector, matchLabels: { ...s.selector?.matchLabels, 'pod-template-hash': hash } },
        template: { ...s.template, metadata: { ...s.template?.metadata, labels } },
      },
    })
  } else if (replicas(current) !== n || current.metadata.annotations?.[REVISION] !== revision) {
    current = host.store('apps/v1', 'replicasets', {
      ...current,
      metadata: { ...current.metadata, annotations },
      spec: { ...spec(current), replicas: n },
    })
  }
  c.setStatus('replicasets', current, rsStatus(n, ready, current))
  for (const old of owned)
    if (old.metadata.name !== current.metadata.name && replicas(old) !== 0) {
      const scaled = host.store('apps/v1', 'replicasets', { ...old, spec: { ...spec(old), replicas: 0 } })
      c.setStatus('replicasets', scaled, rsStatus(0, 0, scaled))
    }
  const fresh = host.find('apps/v1', 'deployments', namespace, name) ?? dep
  c.setStatus(
    'deployments',
    fresh,
    {
      observedGeneration: fresh.metadata.generation,
      ...counts({
        replicas: n,
        updatedReplicas: n,
        readyReplicas: ready,
        availableReplicas: ready,
        unavailableReplicas: n - ready,
      }),
      conditions:
        ready === n
          ? [
              condition(
                'Available',
                'True',
                'MinimumReplicasAvailable',
                'Deployment has minimum availability.',
              ),
              condition(
                'Progressing',
                'True',
                'NewReplicaSetAvailable',
                `ReplicaSet "${current.metadata.name}" has successfully progressed.`,
              ),
            ]
          : [
              condition(
                'Available',
                'False',
                'MinimumReplicasUnavailable',
                'Deployment does not have minimum availability.',
              ),
              condition(
                'Progressing',
                'True',
                'ReplicaSetUpdated',
                `ReplicaSet "${current.metadata.name}" is progressing.`,
              ),
            ],
    },
    { ...fresh.metadata, annotations: { ...fresh.metadata.annotations, [REVISION]: revision } },
  )
}

const REVISION = 'deployment.kubernetes.io/revision'

interface Selector {
  matchLabels?: Record<string, string>
  matchExpressions?: unknown[]
}

const spec = (obj: KubeObject) =>
  (obj.spec ?? {}) as { replicas?: number; completions?: number; template?: unknown }
const replicas = (obj: KubeObject) => spec(obj).replicas ?? 1

function controllerOf(obj: KubeObject): { kind?: string; uid?: string } | undefined {
  const refs = (obj.metadata.ownerReferences ?? []) as Array<{
    kind?: string
    uid?: string
    controller?: boolean
  }>
  return refs.find((r) => r.controller)
}

/** As the real API omits zero counts (omitempty) in workload status. */
function counts(fields: Record<string, number | undefined>): Record<string, number> {
  return Object.fromEntries(Object.entries(fields).filter((e): e is [string, number] => !!e[1]))
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')

function condition(type: string, status: string, reason: string, message = '') {
  const t = now()
  return { type, status, reason, message, lastUpdateTime: t, lastTransitionTime: t }
}

/** A condition that did not change keeps its times, as controllers keep them. */
function keepTransitionTimes(status: Record<string, unknown>, before: unknown): Record<string, unknown> {
  const old = ((before as { conditions?: unknown[] } | undefined)?.conditions ?? []) as Array<
    Record<string, unknown>
  >
  const conditions = status.conditions as Array<Record<string, unknown>> | undefined
  if (!conditions) return status
  return {
    ...status,
    conditions: conditions.map((c) => {
      const same = old.find(
        (o) => o.type === c.type && o.status === c.status && o.reason === c.reason && o.message === c.message,
      )
      return same
        ? { ...c, lastUpdateTime: same.lastUpdateTime, lastTransitionTime: same.lastTransitionTime }
        : c
    }),
  }
}

/** Like the deployment controller's hash: stable per template, from the safe alphabet of rand.SafeEncodeString. */
export function podTemplateHash(template: unknown): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789'
  // by content, not key order: a patch (a rollback) can bring back a template in another order,
  // and helm 3 then looks for the ReplicaSet whose template equals it
  const digest = createHash('sha256')
    .update(canonicalJson(template ?? {}))
    .digest()
  return [...digest.subarray(0, 10)].map((b) => alphabet[b % alphabet.length]).join('')
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

/** Whether a held workload is the one `b` releases (a ref without namespace releases it in all). */
function sameRef(a: WorkloadRef | undefined, b: WorkloadRef): boolean {
  if (!a || a.name !== b.name) return false
  if (b.namespace !== undefined && a.namespace !== b.namespace) return false
  return (
    (b.kind !== undefined && a.kind === b.kind) || (b.resource !== undefined && a.resource === b.resource)
  )
}
