/**
 * Who gets which data (capi.md §6): nothing before the Cluster's infrastructure is ready; then the
 * first control-plane Machine of a Cluster gets init data until the Cluster reports its control
 * plane initialized; after that every Machine gets join data. Join data asked for too early would
 * reference a cluster that does not exist yet, so it is an error, not a document.
 */
import { CliError } from '../errors/index.js'
import { isControlPlane } from './parse.js'
import type { BootstrapObjects, BootstrapRole, Cluster, KubeadmConfigSpec, Machine, Origin } from './types.js'

export const CONTROL_PLANE_READY_ANNOTATION = 'cluster.x-k8s.io/control-plane-ready'

export interface Assignment {
  machine: Machine & { origin: Origin }
  cluster: Cluster & { origin: Origin }
  spec: KubeadmConfigSpec
  role: BootstrapRole
}

export interface Waiting {
  machine: string
  reason: string
}

export const INFRASTRUCTURE_READY_CONDITION = 'InfrastructureReady'

/**
 * What the Cluster says about its infrastructure: v1beta1's `status.infrastructureReady`, or
 * v1beta2's InfrastructureReady condition (conversion maps `initialization.infrastructureProvisioned`
 * to the former). A hand-written manifest has no status at all: 'unreported'.
 */
export function infrastructureState(cluster: Cluster): 'ready' | 'not-ready' | 'unreported' {
  const condition = (cluster.status?.conditions ?? []).find((c) => c.type === INFRASTRUCTURE_READY_CONDITION)
  const ready = cluster.status?.infrastructureReady
  if (ready === true || condition?.status === 'True') return 'ready'
  if (ready === false || condition !== undefined) return 'not-ready'
  return 'unreported'
}

export function isControlPlaneInitialized(cluster: Cluster): boolean {
  return (
    cluster.metadata.annotations?.[CONTROL_PLANE_READY_ANNOTATION] === 'true' ||
    (cluster.status?.conditions ?? []).some(
      (c) => c.type === 'ControlPlaneInitialized' && c.status === 'True',
    )
  )
}

export interface AssignOptions {
  machine?: string
  /** Attested mode: every machine gets its data at once (no token; the node waits for the control plane). */
  anyTime?: boolean
  /**
   * A controller reads live objects: a Cluster that has not reported its infrastructure waits. Files
   * written by hand carry no status, so there 'unreported' counts as ready and only an explicit
   * not-ready waits.
   */
  requireInfrastructureReport?: boolean
}

/** Roles for the requested machine (or all of them). */
export function assignRoles(
  objects: BootstrapObjects,
  opts: AssignOptions,
): { assignments: Assignment[]; waiting: Waiting[] } {
  const wanted = opts.machine
  if (wanted !== undefined && !objects.machines.some((m) => m.metadata.name === wanted)) {
    const names = objects.machines.map((m) => m.metadata.name).join(', ') || 'none'
    throw new CliError(`Machine "${wanted}" is not in the input (machines: ${names})`, { exitCode: 2 })
  }
  const assignments: Assignment[] = []
  const waiting: Waiting[] = []
  for (const machine of objects.machines) {
    if (wanted !== undefined && machine.metadata.name !== wanted) continue
    const cluster = objects.clusters.find(
      (c) => c.metadata.name === machine.spec.clusterName,
    ) as Assignment['cluster']
    const ref = machine.spec.bootstrap?.configRef as { kind?: string; name: string }
    const spec = objects.configs.get(`${ref.kind ?? 'KubeadmConfig'}/${ref.name}`)?.spec ?? {}
    const initMachine = objects.machines.find(
      (m) => m.spec.clusterName === cluster.metadata.name && isControlPlane(m),
    )
    const infrastructure = infrastructureState(cluster)
    if (
      infrastructure === 'not-ready' ||
      (infrastructure === 'unreported' && opts.requireInfrastructureReport)
    ) {
      waiting.push({ machine: machine.metadata.name, reason: infrastructureReason(cluster) })
      continue
    }
    const ready = isControlPlaneInitialized(cluster)
    const joinRole: BootstrapRole = isControlPlane(machine) ? 'control-plane-join' : 'worker-join'
    if (ready) assignments.push({ machine, cluster, spec, role: joinRole })
    else if (machine === initMachine) assignments.push({ machine, cluster, spec, role: 'init' })
    else if (opts.anyTime) assignments.push({ machine, cluster, spec, role: joinRole })
    else waiting.push({ machine: machine.metadata.name, reason: notReadyReason(cluster, initMachine) })
  }
  const blocked = waiting[0]
  if (wanted !== undefined && blocked) {
    const infrastructure = blocked.reason.includes('infrastructure')
    throw new CliError(
      `Machine "${wanted}" cannot get ${infrastructure ? 'bootstrap' : 'join'} data yet: ${blocked.reason}`,
      {
        hint: infrastructure
          ? "once the machines' infrastructure exists, set status.infrastructureReady: true (v1beta2: the InfrastructureReady condition) on the Cluster and run again"
          : `once the control plane is up, set the annotation ${CONTROL_PLANE_READY_ANNOTATION}: "true" (or the condition ControlPlaneInitialized=True) on the Cluster and run again`,
      },
    )
  }
  return { assignments, waiting }
}

function infrastructureReason(cluster: Cluster): string {
  return `Cluster "${cluster.metadata.name}" has not reported its infrastructure ready (WaitingForClusterInfrastructure)`
}

function notReadyReason(cluster: Cluster, initMachine: Machine | undefined): string {
  const init = initMachine
    ? `; "${initMachine.metadata.name}" gets the init data`
    : '; the input has no control-plane Machine to initialize it'
  return `Cluster "${cluster.metadata.name}" has not reported its control plane initialized${init}`
}
