/** What the node does for one Init request, from init-secret check to the admin kubeconfig. */
import type { InitRequest } from '../../../gen/init.js'
import {
  encodeJoinConfig,
  measurementsForJoins,
  parseJoinConfig,
  type Measurements,
} from '../../attestation/index.js'
import { canonicalDiskUuid, controlPlaneEndpoint, MEASUREMENT_SALT_BYTES } from '../../contract/index.js'
import { chainMessage } from '../../errors/index.js'
import {
  checkInitSecret,
  ClusterKms,
  deriveClusterId,
  parseClusterKmsUri,
  type MasterSecret,
} from '../../kms/index.js'
import { kubernetesNodeName, writeNodeState, type NodeMember } from '../../nodeconfig/index.js'
import type { NodePaths } from '../../paths.js'
import type { Logger } from '../../system/index.js'
import { isPatchRelease, parseKubernetesVersion } from '../../versions/index.js'
import type { Component, StagedComponents } from '../components/installer.js'
import { kubeadmPaths, type KubeadmInitInput } from '../kubeadm/kubeadm-config.js'
import { NodeLockedError, type NodeLock } from '../node-lock.js'
import type { StateDiskMark } from '../../statedisk/index.js'
import { writeClusterFiles, writeServiceSecrets } from '../node-state.js'

export const DEFAULT_CLUSTER_NAME = 'constellation'
export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12'

export class InitSecretError extends Error {
  constructor() {
    super('invalid init secret')
    this.name = 'InitSecretError'
  }
}

/** A request the node cannot act on (bad KMS URI, salt, version): nothing was changed. */
export class BadInitRequestError extends Error {
  constructor(message: string, opts?: ErrorOptions) {
    super(message, opts)
    this.name = 'BadInitRequestError'
  }
}

/** The node cannot act on any Init yet (its state disk is unreadable); it took no lock and changed nothing. */
export class NodeNotReadyError extends Error {
  constructor(message: string, opts?: ErrorOptions) {
    super(message, opts)
    this.name = 'NodeNotReadyError'
  }
}

/** The requested components cannot be installed (refused, unreachable, wrong hash, unsafe archive); nothing was changed. */
export class ComponentsUnavailableError extends Error {
  constructor(opts?: ErrorOptions) {
    super('the Kubernetes components cannot be installed; nothing was changed on the node', opts)
    this.name = 'ComponentsUnavailableError'
  }
}

/** The caller hung up before the node took its lock: nothing was changed, and no lock is taken for nobody. */
export class CallerGoneError extends Error {
  constructor() {
    super('the caller went away before the node lock; nothing was changed on the node')
    this.name = 'CallerGoneError'
  }
}

export interface InitNodeDeps {
  initSecretHash: string
  /** Called once the caller proved the init secret. */
  onSecretProven?: () => void
  /** True once the caller went away: checked right before the lock, the point of no return. */
  callerGone?: () => boolean
  nodeLock: NodeLock
  /**
   * Called right after the lock was taken, with the request's master secret: stop the JoinClient;
   * the server stops after this call.
   */
  onLocked: (master: MasterSecret) => void
  disk: StateDisk
  paths: NodePaths
  self: NodeMember
  /** HOST:PORT of the control-plane load balancer; the node's own IP when absent. */
  loadBalancerEndpoint?: string
  /** Checks, downloads and verifies the components (stageComponents in production); nothing is installed yet. */
  stageComponents: (components: readonly Component[]) => Promise<StagedComponents>
  /** Aborted when the daemon stops: no lock is taken after that. */
  signal?: AbortSignal
  /** `signal` stops kubeadm when the state disk cannot be prepared while it runs. */
  kubeadmInit: (input: KubeadmInitInput, signal: AbortSignal) => Promise<Buffer>
  log: Logger
}

export interface InitResult {
  kubeconfig: Buffer
  clusterId: Buffer
}

export async function initializeNode(req: InitRequest, deps: InitNodeDeps): Promise<InitResult> {
  const { log } = deps
  if (!(await checkInitSecret(req.initSecret, deps.initSecretHash))) throw new InitSecretError()
  deps.onSecretProven?.()
  const { master, kms, measurementSecret, clusterId } = deriveClusterSecrets(req)
  const joinConfig = joinConfigOf(req, log)
  // Everything that can fail for reasons outside kubeadm happens before the lock: the disk is read
  // while the components are fetched and verified.
  const [disk, components] = await Promise.allSettled([
    readDiskUuid(deps),
    deps.stageComponents(req.kubernetesComponents).catch((cause: unknown) => {
      throw new ComponentsUnavailableError({ cause })
    }),
  ])
  if (disk.status === 'rejected' || components.status === 'rejected') {
    if (components.status === 'fulfilled') await components.value.discard()
    throw disk.status === 'rejected' ? disk.reason : (components as PromiseRejectedResult).reason
  }
  const diskUuid = disk.value
  const staged = components.value
  // Stopped when the state disk cannot be prepared: kubeadm's cluster would be of no use then.
  const stopKubeadm = new AbortController()
  let stateDisk: Promise<void> | undefined
  try {
    if (deps.signal?.aborted)
      throw new NodeNotReadyError('the node is stopping; nothing was changed on the node')
    if (deps.callerGone?.()) throw new CallerGoneError()
    if (!(await deps.nodeLock.tryLockOnce(clusterId))) throw new NodeLockedError()
    deps.onLocked(master)
    log.info('Node lock taken; PCR 15 now carries the cluster ID', { clusterId: clusterId.toString('hex') })
    // The disk's new key (cryptsetup's key derivation: seconds of argon2id in production) and the
    // files the node's services read later need nothing from kubeadm, nor kubeadm from them: they
    // are prepared while the components are installed and kubeadm runs.
    stateDisk = prepareStateDisk(
      req,
      { master, diskUuid, diskKey: kms.diskKey(diskUuid), measurementSecret },
      deps,
    ).then(() =>
      writeClusterFiles(deps.paths, { joinConfig, components: req.kubernetesComponents }).catch(
        wrapWith('writing the join-config and components'),
      ),
    )
    stateDisk.catch(() => stopKubeadm.abort())
    await staged.install().catch(wrapWith('installing Kubernetes components'))
  } catch (err) {
    // a disk that failed meanwhile is the first cause: name it rather than what it stopped
    const diskFailure: unknown = await stateDisk?.then(
      () => undefined,
      (diskErr: unknown) => diskErr,
    )
    throw diskFailure ?? err
  } finally {
    await staged.discard()
  }
  const [prepared, initialized] = await Promise.allSettled([
    stateDisk,
    // a disk that failed already is thrown below: kubeadm is not started for nothing
    stopKubeadm.signal.aborted
      ? Promise.reject(new Error('kubeadm init was not run'))
      : deps.kubeadmInit(kubeadmInput(req, deps), stopKubeadm.signal).catch(wrapWith('running kubeadm init')),
  ])
  if (prepared.status === 'rejected') throw prepared.reason
  if (initialized.status === 'rejected') throw initialized.reason
  const kubeconfig = initialized.value
  log.info('Cluster initialized', { clusterId: clusterId.toString('hex') })
  return { kubeconfig, clusterId }
}

/** Read before the lock: a wrong stateDisk then leaves the node untouched, to be fixed and restarted. */
function readDiskUuid(deps: InitNodeDeps): Promise<string> {
  return deps.disk.uuid().catch((cause: unknown) => {
    deps.log.warn('Cannot read the state disk; refusing Init', { error: chainMessage(cause) })
    throw new NodeNotReadyError('the state disk cannot be read; nothing was changed on the node', { cause })
  })
}

/** Re-keys the state disk with the cluster's disk key, then writes what the node's services need. */
async function prepareStateDisk(
  req: InitRequest,
  secrets: { master: MasterSecret; diskUuid: string; diskKey: Buffer; measurementSecret: Buffer },
  deps: InitNodeDeps,
): Promise<void> {
  const { master, diskUuid, diskKey, measurementSecret } = secrets
  await rekeyStateDisk(deps.disk, deps.paths, diskKey).catch(wrapWith('setting the state disk key'))
  deps.log.info('State disk key set', { diskUUID: canonicalDiskUuid(diskUuid) })

  await writeNodeState(deps.paths, {
    role: 'control-plane',
    measurementSalt: req.measurementSalt,
    diskUuid: canonicalDiskUuid(diskUuid),
  }).catch(wrapWith('writing node state'))
  await writeServiceSecrets(deps.paths, {
    masterSecret: master.key,
    salt: master.salt,
    measurementSecret,
    measurementSalt: req.measurementSalt,
  }).catch(wrapWith('writing service secrets'))
}

function deriveClusterSecrets(req: InitRequest) {
  let master
  try {
    master = parseClusterKmsUri(req.kmsUri)
  } catch (cause) {
    throw new BadInitRequestError('bad KMS URI', { cause })
  }
  if (req.measurementSalt.length !== MEASUREMENT_SALT_BYTES)
    throw new BadInitRequestError(
      `measurement salt is ${req.measurementSalt.length} bytes, want ${MEASUREMENT_SALT_BYTES}`,
    )
  const version = req.kubernetesVersion
  if (!version.startsWith('v') || !isPatchRelease(parseKubernetesVersion(version)))
    throw new BadInitRequestError(
      `kubernetes version ${JSON.stringify(req.kubernetesVersion)} is not vMAJOR.MINOR.PATCH`,
    )
  const kms = new ClusterKms(master.key, master.salt)
  const measurementSecret = kms.measurementSecret()
  return {
    master,
    kms,
    measurementSecret,
    clusterId: deriveClusterId(measurementSecret, req.measurementSalt),
  }
}

/**
 * The join-config from the measurements the operator sent (field 100), checked before the lock.
 * PCR 15 is enforced as zero for joining nodes whatever the operator's set says (the operator may
 * only warn about it when attesting this node). None sent (a client that predates field 100): the
 * node initializes, and nobody can join until the operator sends measurements.
 */
function joinConfigOf(req: InitRequest, log: Logger): string | undefined {
  const entries = Object.entries(req.measurements)
  if (entries.length === 0) {
    log.warn('The Init request carried no measurements; no node can join until the operator sends them', {
      hint: 'constellation join-config update',
    })
    return undefined
  }
  const measurements: Measurements = new Map(
    entries.map(([pcr, m]) => [Number(pcr), { expected: Buffer.from(m.expected), warnOnly: m.warnOnly }]),
  )
  const text = encodeJoinConfig(measurementsForJoins(measurements))
  try {
    parseJoinConfig(text)
  } catch (cause) {
    throw new BadInitRequestError('measurements (field 100) cannot be enforced on joining nodes', { cause })
  }
  return text
}

function kubeadmInput(req: InitRequest, deps: InitNodeDeps): KubeadmInitInput {
  return {
    kubernetesVersion: req.kubernetesVersion,
    clusterName: req.clusterName || DEFAULT_CLUSTER_NAME,
    nodeName: kubernetesNodeName(deps.self.name),
    nodeIP: deps.self.vpcIP,
    // the endpoint the join service names to joiners (contract): a load balancer's port is kept
    controlPlaneEndpoint: controlPlaneEndpoint({
      self: deps.self,
      loadBalancerEndpoint: deps.loadBalancerEndpoint,
    }),
    certSANs: req.apiserverCertSans,
    serviceCIDR: req.serviceCidr || DEFAULT_SERVICE_CIDR,
    conformance: req.conformanceMode,
    paths: kubeadmPaths(deps.paths),
  }
}

const wrapWith =
  (what: string) =>
  (cause: unknown): never => {
    throw new Error(what, { cause })
  }

/** The state disk operations init and join need (statedisk's CryptsetupDisk). */
export interface StateDisk {
  /** The LUKS UUID as cryptsetup reports it. */
  uuid(): Promise<string>
  /** Replaces the passphrase held in `oldKeyFile` by `newKey`. */
  changeKey(oldKeyFile: string, newKey: Buffer): Promise<void>
  writeMark(mark: StateDiskMark): Promise<void>
}

/**
 * Replaces the boot's random key (state-disk setup left it in paths.stateDiskInitialKeyFile) by the
 * cluster's disk key, then marks the disk initialized: from now on a reboot asks for that key.
 */
export async function rekeyStateDisk(disk: StateDisk, paths: NodePaths, diskKey: Buffer): Promise<void> {
  await disk.changeKey(paths.stateDiskInitialKeyFile, diskKey)
  await disk.writeMark('initialized')
}
