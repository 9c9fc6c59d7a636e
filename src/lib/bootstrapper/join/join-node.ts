/**
 * What the node does with a checked join ticket (Constellation's startNodeAndJoin): take the node
 * lock with the cluster ID, then re-key the state disk, persist its state, write the kubelet's and
 * (for a control plane) the cluster's PKI, and run kubeadm join. Past the lock every failure leaves
 * the node unusable, so everything that can be checked was checked before.
 */
import { canonicalDiskUuid } from '../../contract/index.js'
import { deriveClusterId } from '../../kms/index.js'
import { CONTROL_PLANE_SERVICE_FILES, type NodePaths } from '../../paths.js'
import { writeNodeState } from '../../nodeconfig/index.js'
import { writeFileAtomic, type Logger, writeSecretFile } from '../../system/index.js'
import { rekeyStateDisk, type StateDisk } from '../init/init-node.js'
import type { StagedComponents } from '../components/installer.js'
import type { KubeadmJoinInput } from '../kubeadm/kubeadm-join-config.js'
import type { JoinTicket } from './join-ticket.js'
import type { NodeLock } from '../node-lock.js'
import { writeClusterFiles, writeMeasurementSecrets } from '../node-state.js'
import { writePkiFiles } from './pki-files.js'

export interface JoinNodeDeps {
  lock: NodeLock
  /** Called right after this join took the lock: the InitServer stops. */
  onLocked: () => void
  disk: StateDisk
  paths: NodePaths
  kubeadmJoin: (input: KubeadmJoinInput) => Promise<void>
  log: Logger
}

export interface JoinPlan {
  ticket: JoinTicket
  controlPlane: boolean
  nodeName: string
  nodeIP: string
  /** The UUID the ticket's disk key was derived for. */
  diskUuid: string
  /** The load balancer's HOST:PORT overrides the API endpoint the join service named. */
  loadBalancerEndpoint?: string
  /** The key the ticket's kubelet certificate certifies (PEM). */
  kubeletKeyPem: string
  staged: StagedComponents
}

/** The join failed after the node lock: the node cannot be used any more. */
export class JoinFailedError extends Error {
  constructor(step: string, cause: unknown) {
    super(`joining failed after the node lock was taken: ${step}`, { cause })
    this.name = 'JoinFailedError'
  }
}

/** False when Init held the node lock already: this node is being initialized, the join stops. */
export async function joinNode(plan: JoinPlan, deps: JoinNodeDeps): Promise<boolean> {
  const { ticket, controlPlane } = plan
  // the cluster ID the init node derived, so PCR 15 reads the same on every node of the cluster
  const clusterId = deriveClusterId(ticket.measurementSecret, ticket.measurementSalt)
  const step = async (name: string, run: () => Promise<unknown>) => {
    try {
      await run()
    } catch (cause) {
      throw new JoinFailedError(name, cause)
    }
  }
  let locked = false
  await step('taking the node lock', async () => (locked = await deps.lock.tryLockOnce(clusterId)))
  if (!locked) return false
  deps.onLocked()
  deps.log.info('Node lock taken; PCR 15 now carries the cluster ID', {
    clusterId: clusterId.toString('hex'),
  })
  const diskUuid = canonicalDiskUuid(plan.diskUuid)
  await step('setting the state disk key and installing the Kubernetes components', async () => {
    const done = await Promise.allSettled([
      rekeyStateDisk(deps.disk, deps.paths, ticket.diskKey),
      plan.staged.install(),
    ])
    for (const result of done) if (result.status === 'rejected') throw result.reason
  })
  deps.log.info('State disk key set', { diskUUID: diskUuid })
  await step('writing node state', () =>
    writeNodeState(deps.paths, {
      role: controlPlane ? 'control-plane' : 'worker',
      measurementSalt: ticket.measurementSalt,
      diskUuid,
    }),
  )
  await step('writing the kubelet certificate', async () => {
    await writeFileAtomic(deps.paths.kubeletClientCert, ticket.kubeletCertPem)
    await writeSecretFile(deps.paths.kubeletClientKey, plan.kubeletKeyPem, 'replace')
  })
  if (controlPlane) {
    await step('writing the control-plane PKI', () =>
      writePkiFiles(deps.paths.kubernetesPki, ticket.controlPlaneFiles),
    )
    await step("writing the control plane's service files", () => writeServiceFiles(ticket, deps.paths))
  }
  const apiServerEndpoint = plan.loadBalancerEndpoint ?? ticket.apiServerEndpoint
  await step('running kubeadm join', () =>
    deps.kubeadmJoin({
      nodeName: plan.nodeName,
      nodeIP: plan.nodeIP,
      apiServerEndpoint,
      token: ticket.token,
      caCertHash: ticket.caCertHash,
      controlPlane,
      clusterVersion: ticket.kubernetesVersion,
    }),
  )
  deps.log.info('Node joined the cluster', {
    kubernetesVersion: ticket.kubernetesVersion || undefined,
    role: controlPlane ? 'control-plane' : 'worker',
    apiServerEndpoint,
    clusterId: clusterId.toString('hex'),
    pkiFiles: controlPlane ? ticket.controlPlaneFiles.map((f) => f.name) : undefined,
  })
  return true
}

/** What this control plane's key and join services read: every control plane can serve joins. */
async function writeServiceFiles(ticket: JoinTicket, paths: NodePaths): Promise<void> {
  for (const { name, data } of ticket.serviceFiles)
    await writeSecretFile(paths[CONTROL_PLANE_SERVICE_FILES[name]], data, 'replace')
  await writeMeasurementSecrets(paths, ticket)
  await writeClusterFiles(paths, { components: ticket.components })
}
