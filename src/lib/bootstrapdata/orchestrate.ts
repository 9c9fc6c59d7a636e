/**
 * Who gets which data (capi.md §6): the first control-plane Machine of a Cluster gets init data
 * until the Cluster reports its control plane initialized; after that every Machine gets join
 * data. Join data asked for too early would reference a cluster that does not exist yet, so it is
 * an error, not a document.
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

export function isControlPlaneInitialized(cluster: Cluster): boolean {
  return (
    cluster.metadata.annotations?.[CONTROL_PLANE_READY_ANNOTATION] === 'true' ||
    (cluster.status?.conditions ?? []).some(
      (c) => c.type === 'ControlPlaneInitialized' && c.status === 'True',
    )
  )
}

/**
 * Roles for the requested machine (or all of them). `anyTime` (attested mode) hands every machine
 * its data at once: it carries no token, and the node itself waits for the control plane.
 */
export function assignRoles(
  objects: BootstrapObjects,
  opts: { machine?: string; anyTime?: boolean },
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
    const ready = isControlPlaneInitialized(cluster)
    const joinRole: BootstrapRole = isControlPlane(machine) ? 'control-plane-join' : 'worker-join'
    if (ready) assignments.push({ machine, cluster, spec, role: joinRole })
    else if (machine === initMachine) assignments.push({ machine, cluster, spec, role: 'init' })
    else if (opts.anyTime) assignments.push({ machine, cluster, spec, role: joinRole })
    else waiting.push({ machine: machine.metadata.name, reason: notReadyReason(cluster, initMachine) })
  }
  if (wanted !== undefined && waiting.length > 0) {
    throw new CliError(`Machine "${wanted}" cannot get join data yet: ${waiting[0]?.reason}`, {
      hint: `once the control plane is up, set the annotation ${CONTROL_PLANE_READY_ANNOTATION}: "true" (or the condition ControlPlaneInitialized=True) on the Cluster and run again`,
    })
  }
  return { assignments, waiting }
}

function notReadyReason(cluster: Cluster, initMachine: Machine | undefined): string {
  const init = initMachine
    ? `; "${initMachine.metadata.name}" gets the init data`
    : '; the input has no control-plane Machine to initialize it'
  return `Cluster "${cluster.metadata.name}" has not reported its control plane initialized${init}`
}
