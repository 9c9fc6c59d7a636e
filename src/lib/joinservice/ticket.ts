/**
 * Join and rejoin tickets for a node whose attestation already verified (Constellation's
 * joinservice IssueJoinTicket steps): everything the node needs to unlock its disk, prove its
 * cluster ID and run `kubeadm join`. Every dependency is injected; nothing secret reaches an error.
 */
import type { Component } from '../../gen/components.js'
import type {
  IssueJoinTicketRequest,
  IssueJoinTicketResponse,
  IssueRejoinTicketRequest,
  IssueRejoinTicketResponse,
} from '../../gen/join.js'
import { MEASUREMENT_SECRET_KEY_ID } from '../kms/index.js'
import type { NodeRole } from '../nodeconfig/index.js'
import { toPem } from '../x509/index.js'
import type { TokenIssuer } from '../kube/index.js'
import type { ClusterCa, ControlPlaneFile } from './cluster-ca.js'
import { claimedNodeName, csrProblems, type CsrFields, type CsrParser } from './csr-policy.js'
import type { KubeletSigner } from './kubelet-signer.js'
import type { StateDiskRecord, StateDiskRegistry } from './state-disks.js'

export const STATE_DISK_KEY_BYTES = 32
export const MEASUREMENT_SECRET_BYTES = 32
/** A LUKS UUID. Anything else could name another cluster key (`measurementSecret`, an SSH CA seed…). */
const DISK_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** kms.API/GetDataKey: `id` without the `key-` prefix the key service adds. */
export type DataKeyGetter = (id: string, length: number) => Promise<Buffer>

export interface TicketDeps {
  dataKey: DataKeyGetter
  tokens: TokenIssuer
  kubeletSigner: KubeletSigner
  ca: Pick<ClusterCa, 'caCertHash' | 'controlPlaneFiles'>
  /** Sent to control planes beside the PKI: what they need to run their own key and join services. */
  controlPlaneServiceFiles: () => Promise<readonly ControlPlaneFile[]>
  /** The components the cluster runs now (they change with upgrades). */
  components: () => Promise<Component[]>
  measurementSalt: Buffer
  /** Records each ticket's disk, so that only the cluster's disks can rejoin. */
  stateDisks: StateDiskRegistry
  /** HOST:PORT of the API server a node joins through. */
  apiServerEndpoint: string
}

export interface RequestCheckDeps {
  parseCsr: CsrParser
  /** The node name the cluster knows for an address (metadata), if it knows one. */
  expectedNodeName?: (address: string) => string | undefined
}

export type RefusalStatus = 'invalid-argument' | 'permission-denied'

/** The request itself is at fault; the message names the field and is safe to send back. */
export class JoinRefusedError extends Error {
  constructor(
    readonly status: RefusalStatus,
    message: string,
    /** The node name the request claimed, for the audit line; empty if none. */
    readonly node = '',
  ) {
    super(message)
    this.name = 'JoinRefusedError'
  }
}

/** A dependency failed. The message names only the step; the cause is for the server's log. */
export class TicketStepError extends Error {
  constructor(
    readonly step: string,
    cause: unknown,
  ) {
    super(`${step} failed`, { cause })
    this.name = 'TicketStepError'
  }
}

export interface CheckedJoinRequest {
  node: string
  role: NodeRole
  /** Lower-cased, as the InitServer derives the init node's disk key. */
  diskUuid: string
  csr: CsrFields
}

export function checkDiskUuid(uuid: string): string {
  if (!DISK_UUID.test(uuid))
    throw new JoinRefusedError(
      'invalid-argument',
      `disk_uuid: ${JSON.stringify(uuid.slice(0, 64))} is not a UUID`,
    )
  return uuid.toLowerCase()
}

/** Everything about the request that needs no dependency call: disk UUID, CSR shape, name and address. */
export function checkJoinRequest(
  req: IssueJoinTicketRequest,
  peerAddress: string,
  deps: RequestCheckDeps,
): CheckedJoinRequest {
  let csr: CsrFields
  try {
    csr = deps.parseCsr(req.certificateRequest)
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err)
    throw new JoinRefusedError('invalid-argument', `certificate_request: not a PKCS#10 request: ${why}`)
  }
  const node = claimedNodeName(csr) ?? ''
  let diskUuid: string
  try {
    diskUuid = checkDiskUuid(req.diskUuid)
  } catch (err) {
    throw err instanceof JoinRefusedError ? new JoinRefusedError(err.status, err.message, node) : err
  }
  const problems = csrProblems(csr, { peerAddress, expectedNodeName: deps.expectedNodeName?.(peerAddress) })
  if (problems.length > 0)
    throw new JoinRefusedError(
      problems.some((p) => p.kind === 'forbidden') ? 'permission-denied' : 'invalid-argument',
      `certificate_request: ${problems.map((p) => `${p.field}: ${p.reason}`).join('; ')}`,
      node,
    )
  return { node, role: req.isControlPlane ? 'control-plane' : 'worker', diskUuid, csr }
}

const step = <T>(name: string, run: () => Promise<T>): Promise<T> =>
  Promise.resolve()
    .then(run)
    .catch((cause: unknown) => {
      throw new TicketStepError(name, cause)
    })

const measurementSecret = (deps: Pick<TicketDeps, 'dataKey'>) =>
  step('getting the measurement secret from the key service', () =>
    deps.dataKey(MEASUREMENT_SECRET_KEY_ID, MEASUREMENT_SECRET_BYTES),
  )
const diskKey = (deps: Pick<TicketDeps, 'dataKey'>, uuid: string) =>
  step('getting the disk key from the key service', () => deps.dataKey(uuid, STATE_DISK_KEY_BYTES))

/** The steps are independent, so they run at once: a ticket costs the slowest, not the sum. */
export async function issueJoinTicket(
  req: CheckedJoinRequest,
  deps: TicketDeps,
): Promise<IssueJoinTicketResponse> {
  const controlPlane = req.role === 'control-plane'
  const [secret, key, , token, components, kubeletCert, serviceFiles] = await Promise.all([
    measurementSecret(deps),
    diskKey(deps, req.diskUuid),
    // the disk is known before its node gets the key: a node that joined can always rejoin
    step('registering the state disk', () =>
      deps.stateDisks.register(req.diskUuid, { node: req.node, role: req.role }),
    ),
    step('issuing a bootstrap token', () => deps.tokens.issue()),
    step('reading the Kubernetes components', () => deps.components()),
    step('signing the kubelet certificate', () => deps.kubeletSigner.sign(req.csr)),
    controlPlane
      ? step("reading the control plane's service files", () => deps.controlPlaneServiceFiles())
      : [],
  ])
  return {
    stateDiskKey: key,
    measurementSalt: deps.measurementSalt,
    measurementSecret: secret,
    kubeletCert: Buffer.from(toPem(kubeletCert)),
    apiServerEndpoint: deps.apiServerEndpoint,
    token,
    discoveryTokenCaCertHash: deps.ca.caCertHash,
    controlPlaneFiles: controlPlane
      ? [...deps.ca.controlPlaneFiles, ...serviceFiles].map((f) => ({ name: f.name, data: f.data }))
      : [],
    kubernetesVersion: '',
    kubernetesComponents: components,
    // Emergency SSH is not part of this tool: no CA, no host certificate.
    authorizedCaPublicKey: Buffer.alloc(0),
    hostCertificate: Buffer.alloc(0),
  }
}

/**
 * After a reboot: the disk key and measurement secret only, and only for a disk the cluster issued a
 * ticket for. `onKnown` learns whose disk it is (for the audit line) before the keys are fetched.
 */
export async function issueRejoinTicket(
  req: IssueRejoinTicketRequest,
  deps: Pick<TicketDeps, 'dataKey' | 'stateDisks'>,
  onKnown?: (record: StateDiskRecord) => void,
): Promise<IssueRejoinTicketResponse> {
  const uuid = checkDiskUuid(req.diskUuid)
  const known = await step('looking up the state disk', () => deps.stateDisks.lookup(uuid))
  if (!known)
    throw new JoinRefusedError(
      'permission-denied',
      `disk_uuid: ${uuid} is not a state disk of this cluster (no node joined with it)`,
    )
  onKnown?.(known)
  const [stateDiskKey, secret] = await Promise.all([diskKey(deps, uuid), measurementSecret(deps)])
  return { stateDiskKey, measurementSecret: secret }
}
