/**
 * What the node does with a checked join ticket (Constellation's startNodeAndJoin): take the node
 * lock with the cluster ID, then install the components, write the kubelet's and (for a control
 * plane) the cluster's PKI and run kubeadm join, while the state disk is re-keyed and the node state
 * persisted. Past the lock every failure leaves the node unusable, so everything that can be checked
 * was checked before.
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
  /** `signal` stops kubeadm when the state disk cannot be re-keyed while it runs. */
  kubeadmJoin: (input: KubeadmJoinInput, signal: AbortSignal) => Promise<void>
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
  // The disk's new key (cryptsetup's key derivation: seconds of argon2id in production) and the
  // node state need nothing from kubeadm, nor kubeadm from them: they are done while the components,
  // certificates and kubeadm join run. A disk that fails stops kubeadm.
  const stopKubeadm = new AbortController()
  const stateDisk = (async () => {
    await step('setting the state disk key', () => rekeyStateDisk(deps.disk, deps.paths, ticket.diskKey))
    deps.log.info('State disk key set', { diskUUID: diskUuid })
    await step('writing node state', () =>
      writeNodeState(deps.paths, {
        role: controlPlane ? 'control-plane' : 'worker',
        measurementSalt: ticket.measurementSalt,
        diskUuid,
      }),
    )
  })()
  stateDisk.catch(() => stopKubeadm.abort())
  const apiServerEndpoint = plan.loadBalancerEndpoint ?? ticket.apiServerEndpoint
  const kubeadm = (async () => {
    await step('installing the Kubernetes components', () => plan.staged.install())
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
    // a disk that failed already is thrown below: kubeadm is not started for nothing
    if (stopKubeadm.signal.aborted) return
    await step('running kubeadm join', () =>
      deps.kubeadmJoin(
        {
          nodeName: plan.nodeName,
          nodeIP: plan.nodeIP,
          apiServerEndpoint,
          token: ticket.token,
          caCertHash: ticket.caCertHash,
          controlPlane,
          clusterVersion: ticket.kubernetesVersion,
        },
        stopKubeadm.signal,
      ),
    )
  })()
  const [disk, joined] = await Promise.allSettled([stateDisk, kubeadm])
  // the disk's failure is the first cause: name it rather than what it stopped
  if (disk.status === 'rejected') throw disk.reason
  if (joined.status === 'rejected') throw joined.reason
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
