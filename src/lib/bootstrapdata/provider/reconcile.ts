/**
 * One KubeadmConfig, reconciled as Cluster API's kubeadm bootstrap provider does (capi.md §6): find
 * the owning Machine and its Cluster; wait for the infrastructure; init data for exactly one
 * control-plane machine (the init lock), join data once the control plane is initialized; write the
 * data Secret, then the status. Every step can be repeated: a restart between two steps finds what
 * the first one wrote and goes on from there.
 */
import { messageOf } from '../../errors/index.js'
import { KubeApiError, type KubeObject } from '../../kube/index.js'
import { controlPlaneEndpoint, givenJoinToken, usesFileDiscovery } from '../defaults.js'
import { assignRoles, type Assignment } from '../orchestrate.js'
import { CLUSTER_NAME_LABEL, CLUSTER_SECRET_TYPE } from '../types.js'
import type { OwnerReference } from './capi-api.js'
import type { KubeadmConfigObject } from './capi-objects.js'
import { conditionsFor, type ConditionState } from './conditions.js'
import { readObjects, renderData, type MachineObjects } from './machine-data.js'
import { issueToken, refreshToken, TOKEN_ID_ANNOTATION } from './token-refresh.js'
import type { CapiResources, Outcome, ReconcileDeps } from './types.js'

export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused'

export function capiResources(version: 'v1beta1' | 'v1beta2'): CapiResources {
  return {
    version,
    clusters: { group: 'cluster.x-k8s.io', version, plural: 'clusters' },
    machines: { group: 'cluster.x-k8s.io', version, plural: 'machines' },
    kubeadmConfigs: { group: 'bootstrap.cluster.x-k8s.io', version, plural: 'kubeadmconfigs' },
  }
}

export async function reconcileConfig(config: KubeadmConfigObject, deps: ReconcileDeps): Promise<Outcome> {
  const { api, resources } = deps
  const namespace = config.metadata.namespace ?? 'default'
  const owner = (config.metadata.ownerReferences ?? []).find(
    (o) => o.kind === 'Machine' && o.apiVersion.startsWith('cluster.x-k8s.io/'),
  )
  if (!owner) return { result: 'skipped', reason: 'no owning Machine yet' }
  const machine = await api.get(resources.machines, namespace, owner.name)
  if (!machine) return { result: 'skipped', reason: `Machine ${owner.name} not found` }
  const clusterName = machine.spec?.clusterName ?? machine.metadata.labels?.[CLUSTER_NAME_LABEL]
  if (!clusterName) return { result: 'skipped', reason: `Machine ${owner.name} names no Cluster` }
  const cluster = await api.get(resources.clusters, namespace, clusterName)
  if (!cluster) return { result: 'skipped', reason: `Cluster ${clusterName} not found` }
  if (cluster.spec?.paused === true || cluster.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined)
    return { result: 'skipped', reason: `Cluster ${clusterName} is paused` }

  const objects = { config, machine, cluster }
  if (config.status?.dataSecretName) return refreshToken(objects, deps)

  try {
    return await generate(objects, deps)
  } catch (err) {
    const reason = messageOf(err)
    await writeStatus(config, deps, {
      secret: undefined,
      data: { ok: false, reason: 'DataSecretGenerationFailed', message: reason },
    })
    return { result: 'failed', reason }
  }
}

async function generate(o: MachineObjects, deps: ReconcileDeps): Promise<Outcome> {
  const { config, machine, cluster } = o
  const namespace = config.metadata.namespace ?? 'default'
  const existing = await deps.api.getSecret(namespace, config.metadata.name)
  if (existing) {
    // Written by this config before a restart: adopt it, as CAPI does after a pivot.
    if (!ownedBy(existing, config))
      throw new Error(
        `Secret ${namespace}/${config.metadata.name} exists and is not this KubeadmConfig's data`,
      )
    await writeStatus(config, deps, { secret: config.metadata.name, data: { ok: true } })
    return { result: 'ready', secret: config.metadata.name }
  }
  const objects = await readObjects(o, deps.api)
  const { assignments, waiting } = assignRoles(objects, { requireInfrastructureReport: true })
  const assignment = assignments[0]
  if (!assignment) {
    const reason = waiting[0]?.reason ?? 'waiting'
    const infrastructure = reason.includes('infrastructure')
    return wait(
      config,
      deps,
      infrastructure ? 'WaitingForClusterInfrastructure' : 'WaitingForControlPlaneAvailable',
      reason,
    )
  }
  const clusterName = cluster.metadata.name
  if (assignment.role === 'init' && !initConfigured(assignment)) {
    // A control plane that only knows how to join waits for the one that initializes (capi.md §6).
    const reason = `Cluster ${clusterName} has not reported its control plane initialized; this machine only joins`
    return wait(config, deps, 'WaitingForControlPlaneAvailable', reason)
  }
  if (assignment.role === 'init') {
    const lock = await deps.initLock.acquire(cluster, machine.metadata.name)
    if (!lock.acquired) return wait(config, deps, 'WaitingForControlPlaneAvailable', lock.reason)
  } else {
    await deps.initLock.release(namespace, clusterName)
  }
  if (
    assignment.role !== 'init' &&
    !controlPlaneEndpoint(assignment.cluster) &&
    !usesFileDiscovery(assignment.spec)
  )
    return wait(
      config,
      deps,
      'WaitingForControlPlaneAvailable',
      `Cluster ${clusterName} has no spec.controlPlaneEndpoint yet`,
    )
  const authorities = await deps.authorities(cluster, assignment.role === 'init')
  const needsToken =
    assignment.role !== 'init' && !givenJoinToken(assignment.spec) && !usesFileDiscovery(assignment.spec)
  const token = needsToken ? await issueToken(cluster, deps) : undefined
  const { value, format } = renderData(assignment, objects, authorities, token, deps.templates)
  await deps.api.createSecret({
    apiVersion: 'v1',
    kind: 'Secret',
    type: CLUSTER_SECRET_TYPE,
    metadata: {
      name: config.metadata.name,
      namespace,
      labels: { [CLUSTER_NAME_LABEL]: clusterName },
      annotations: token ? { [TOKEN_ID_ANNOTATION]: token.id } : {},
      ownerReferences: [controllerRef(config)],
    },
    data: { value, format },
  })
  await writeStatus(config, deps, { secret: config.metadata.name, data: { ok: true } })
  return { result: 'ready', role: assignment.role, secret: config.metadata.name }
}

const initConfigured = (a: Assignment): boolean =>
  a.spec.initConfiguration !== undefined ||
  a.spec.clusterConfiguration !== undefined ||
  a.spec.joinConfiguration === undefined

export function controllerRef(obj: KubeObject): OwnerReference {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  }
}

const ownedBy = (child: KubeObject, owner: KubeObject): boolean =>
  (child.metadata.ownerReferences ?? []).some((o) => o.uid === owner.metadata.uid && o.controller)

/** Reports why the config has no data yet (condition severity Info: nothing is wrong). */
async function wait(
  config: KubeadmConfigObject,
  deps: ReconcileDeps,
  reason: string,
  message: string,
): Promise<Outcome> {
  await writeStatus(config, deps, {
    secret: undefined,
    data: { ok: false, reason, message, severity: 'Info' },
  })
  return { result: 'waiting', reason: message }
}

async function writeStatus(
  config: KubeadmConfigObject,
  deps: ReconcileDeps,
  state: { secret: string | undefined; data: ConditionState },
): Promise<void> {
  const status = conditionsFor(config, deps.resources.version, state, deps.clock())
  if (JSON.stringify(status) === JSON.stringify(config.status ?? {})) return
  try {
    await deps.api.replaceStatus(deps.resources.kubeadmConfigs, { ...config, status })
  } catch (err) {
    // Someone changed the config since it was read: its watch event reconciles it again.
    if (err instanceof KubeApiError && err.status === 409) return
    throw err
  }
}
