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
import { canonicalDiskUuid, MEASUREMENT_SECRET_BYTES, STATE_DISK_KEY_BYTES } from '../contract/index.js'
import { MEASUREMENT_SECRET_KEY_ID, type DataKeyRequest } from '../kms/index.js'
import type { NodeRole } from '../nodeconfig/index.js'
import { pemOfSigned } from '../x509/index.js'
import type { TokenIssuer } from '../kube/index.js'
import type { ClusterCa, ControlPlaneFile } from './cluster-ca.js'
import { csrProblems, type CsrFields, type CsrParser } from './csr-policy.js'
import { sameIp } from './ip-address.js'
import type { KubeletSigner } from './kubelet-signer.js'
import type { PeerIdentity } from './peer-identity.js'
import { JoinRefusedError, TicketStepError } from './refusals.js'
import { DiskRecordExistsError, type StateDiskRecord, type StateDiskRegistry } from './state-disks.js'

/** A LUKS UUID. Anything else could name another cluster key (`measurementSecret`, an SSH CA seed…). */
const DISK_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * kms.API/GetDataKeys: the keys asked for, in that order, from one call (each `id` without the
 * `key-` prefix the key service adds).
 */
export type DataKeysGetter = (keys: readonly DataKeyRequest[]) => Promise<Buffer[]>

export interface TicketDeps {
  dataKeys: DataKeysGetter
  tokens: TokenIssuer
  kubeletSigner: KubeletSigner
  ca: Pick<ClusterCa, 'caCertHash' | 'controlPlaneFiles'>
  /** Sent to control planes beside the PKI: what they need to run their own key and join services. */
  controlPlaneServiceFiles: () => Promise<readonly ControlPlaneFile[]>
  /** The Kubernetes version and components the cluster runs now (they change with upgrades). */
  kubernetes: () => Promise<{ version: string; components: Component[] }>
  measurementSalt: Buffer
  /** Records each ticket's disk, so that only the cluster's disks can rejoin. */
  stateDisks: StateDiskRegistry
  /** HOST:PORT of the API server a node joins through. */
  apiServerEndpoint: string
  /** When a disk record is made. */
  clock: () => Date
}

export interface RequestCheckDeps {
  parseCsr: CsrParser
}

export interface CheckedJoinRequest {
  /** Who asks, from the metadata and the attested connection: what the ticket is for. */
  peer: PeerIdentity
  node: string
  role: NodeRole
  /** Lower-cased, as the InitServer derives the init node's disk key. */
  diskUuid: string
  csr: CsrFields
}

export function checkDiskUuid(uuid: string, node = ''): string {
  if (!DISK_UUID.test(uuid))
    throw new JoinRefusedError(
      'invalid-argument',
      `disk_uuid: ${JSON.stringify(uuid.slice(0, 64))} is not a UUID`,
      node,
    )
  return canonicalDiskUuid(uuid)
}

/**
 * Everything about the request that needs no dependency call, against who the peer is (from the
 * metadata): its role, its name in the CSR, its address, the disk UUID's form.
 */
export function checkJoinRequest(
  req: IssueJoinTicketRequest,
  peer: PeerIdentity,
  deps: RequestCheckDeps,
): CheckedJoinRequest {
  const { node, role } = peer
  if (req.isControlPlane !== (role === 'control-plane'))
    throw new JoinRefusedError(
      'permission-denied',
      `is_control_plane: ${req.isControlPlane}, but the cluster's metadata lists ${peer.address} as ${role} ${JSON.stringify(node)}`,
      node,
    )
  let csr: CsrFields
  try {
    csr = deps.parseCsr(req.certificateRequest)
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err)
    throw new JoinRefusedError('invalid-argument', `certificate_request: not a PKCS#10 request: ${why}`, node)
  }
  const diskUuid = checkDiskUuid(req.diskUuid, node)
  const problems = csrProblems(csr, { peerAddress: peer.address, expectedNodeName: node })
  if (problems.length > 0)
    throw new JoinRefusedError(
      problems.some((p) => p.kind === 'forbidden') ? 'permission-denied' : 'invalid-argument',
      `certificate_request: ${problems.map((p) => `${p.field}: ${p.reason}`).join('; ')}`,
      node,
    )
  return { peer, node, role, diskUuid, csr }
}

const step = <T>(name: string, run: () => Promise<T>): Promise<T> =>
  Promise.resolve()
    .then(run)
    .catch((cause: unknown) => {
      throw new TicketStepError(name, cause)
    })

/** The disk's key and the measurement secret: one call to the key service per ticket. */
const nodeKeys = (deps: Pick<TicketDeps, 'dataKeys'>, uuid: string) =>
  step('getting the disk key and the measurement secret from the key service', async () => {
    const [diskKey, secret] = await deps.dataKeys([
      { id: uuid, length: STATE_DISK_KEY_BYTES },
      { id: MEASUREMENT_SECRET_KEY_ID, length: MEASUREMENT_SECRET_BYTES },
    ])
    if (!diskKey || !secret) throw new Error('the key service sent fewer keys than asked for')
    return { diskKey, secret }
  })

/**
 * A join is for a new disk: its record is created (create-only) before any key is derived, so a
 * node can never name another node's disk and get its key. The same node asking again for the same
 * disk (its answer was lost) finds its own record and is served again. Then the steps are
 * independent and run at once: a ticket costs the slowest, not the sum.
 */
export async function issueJoinTicket(
  req: CheckedJoinRequest,
  deps: TicketDeps,
): Promise<IssueJoinTicketResponse> {
  await claimDisk(req, deps)
  const controlPlane = req.role === 'control-plane'
  const [keys, , token, kubernetes, kubeletCert, serviceFiles] = await Promise.all([
    nodeKeys(deps, req.diskUuid),
    step("removing the node's earlier disk records", () => dropEarlierDisks(req, deps.stateDisks)),
    step('issuing a bootstrap token', () => deps.tokens.issue(req.node)),
    step("reading the cluster's Kubernetes version and components", () => deps.kubernetes()),
    step('signing the kubelet certificate', () => deps.kubeletSigner.sign(req.csr)),
    controlPlane
      ? step("reading the control plane's service files", () => deps.controlPlaneServiceFiles())
      : [],
  ])
  return {
    stateDiskKey: keys.diskKey,
    measurementSalt: deps.measurementSalt,
    measurementSecret: keys.secret,
    kubeletCert: Buffer.from(pemOfSigned(kubeletCert)),
    apiServerEndpoint: deps.apiServerEndpoint,
    token,
    discoveryTokenCaCertHash: deps.ca.caCertHash,
    controlPlaneFiles: controlPlane
      ? [...deps.ca.controlPlaneFiles, ...serviceFiles].map((f) => ({ name: f.name, data: f.data }))
      : [],
    kubernetesVersion: kubernetes.version,
    kubernetesComponents: kubernetes.components,
    // Emergency SSH is not part of this tool: no CA, no host certificate.
    authorizedCaPublicKey: Buffer.alloc(0),
    hostCertificate: Buffer.alloc(0),
  }
}

/** The record this peer would make for a disk now. */
export const diskRecordFor = (peer: PeerIdentity, clock: () => Date): StateDiskRecord => ({
  node: peer.node,
  role: peer.role,
  address: peer.address,
  tpm: peer.tpm,
  recordedAt: clock().toISOString(),
})

/** Whether `record` was made by this peer: the same node, at the same address, with the same TPM. */
export const recordedFor = (record: StateDiskRecord, peer: PeerIdentity): boolean =>
  record.node === peer.node && sameIp(record.address, peer.address) && record.tpm === peer.tpm

async function claimDisk(req: CheckedJoinRequest, deps: Pick<TicketDeps, 'stateDisks' | 'clock'>) {
  try {
    await deps.stateDisks.create(req.diskUuid, diskRecordFor(req.peer, deps.clock))
  } catch (err) {
    if (!(err instanceof DiskRecordExistsError)) throw new TicketStepError('recording the state disk', err)
    if (err.owner && recordedFor(err.owner, req.peer)) return // a retried join of the same node
    throw new JoinRefusedError(
      'permission-denied',
      `disk_uuid: ${req.diskUuid} is the state disk of node ${JSON.stringify(err.owner?.node ?? 'unknown')} already; a join is for a new disk (a rebooted node asks for a rejoin ticket)`,
      req.node,
    )
  }
}

/** A node has one disk: a node that joins with a new one (reinstalled) retires its earlier records. */
async function dropEarlierDisks(req: CheckedJoinRequest, stateDisks: StateDiskRegistry): Promise<void> {
  const earlier = (await stateDisks.disksOf(req.node)).filter((uuid) => uuid !== req.diskUuid)
  await Promise.all(earlier.map((uuid) => stateDisks.remove(uuid)))
}

/**
 * After a reboot: the disk key and measurement secret only, and only for the disk the cluster
 * recorded for this very peer (its node name and address in the metadata, its TPM).
 */
export async function issueRejoinTicket(
  req: IssueRejoinTicketRequest,
  peer: PeerIdentity,
  deps: Pick<TicketDeps, 'dataKeys' | 'stateDisks'>,
): Promise<IssueRejoinTicketResponse> {
  const uuid = checkDiskUuid(req.diskUuid, peer.node)
  const known = await step('looking up the state disk', () => deps.stateDisks.lookup(uuid))
  if (!known)
    throw new JoinRefusedError(
      'permission-denied',
      `disk_uuid: ${uuid} is not a state disk of this cluster (no node joined with it)`,
      peer.node,
    )
  const mismatch = rejoinMismatch(known, peer)
  if (mismatch) throw new JoinRefusedError('permission-denied', `disk_uuid: ${uuid} ${mismatch}`, peer.node)
  const { diskKey, secret } = await nodeKeys(deps, uuid)
  return { stateDiskKey: diskKey, measurementSecret: secret }
}

function rejoinMismatch(record: StateDiskRecord, peer: PeerIdentity): string | undefined {
  if (record.node !== peer.node)
    return `is the state disk of node ${JSON.stringify(record.node)}, not of ${JSON.stringify(peer.node)} (the metadata's instance at ${peer.address})`
  if (!sameIp(record.address, peer.address))
    return `was recorded for ${JSON.stringify(record.node)} at ${record.address}; this request comes from ${peer.address}`
  if (record.tpm !== peer.tpm)
    return `was recorded with another TPM (attestation key ${short(record.tpm)}); this node attested with ${short(peer.tpm)}`
  return undefined
}

const short = (hexName: string) => `${hexName.slice(4, 20)}…`
