/**
 * What a join ticket must hold before the node commits to it. Every check runs before the node
 * lock: a ticket the node cannot use costs one more request, not the node. Messages name the field
 * and never its secret value.
 */
import { X509Certificate, type KeyObject } from 'node:crypto'
import type { IssueJoinTicketResponse } from '../../../gen/join.js'
import {
  BOOTSTRAP_TOKEN_PATTERN,
  MEASUREMENT_SALT_BYTES,
  MEASUREMENT_SECRET_BYTES,
  STATE_DISK_KEY_BYTES,
} from '../../contract/index.js'
import { CONTROL_PLANE_SERVICE_FILES, type ControlPlaneServiceFileName } from '../../paths.js'
import { parseHostPort } from '../../system/index.js'
import type { Component } from '../components/installer.js'
import { pkiFileNameProblem, type PkiFile } from './pki-files.js'

const CA_CERT_HASH = /^sha256:[0-9a-f]{64}$/

export interface JoinTicket {
  diskKey: Buffer
  measurementSalt: Buffer
  measurementSecret: Buffer
  kubeletCertPem: string
  /** HOST:PORT of the API server, as the join service knows it. */
  apiServerEndpoint: string
  token: string
  caCertHash: string
  /** Only for a control plane; a worker's ticket never carries CA keys onto its disk. */
  controlPlaneFiles: PkiFile[]
  /** Only for a control plane: what its own key and join services need (the master secret among them). */
  serviceFiles: Array<{ name: ControlPlaneServiceFileName; data: Buffer }>
  components: Component[]
  /** What the cluster runs (`vX.Y.Z`), or '' from a join service that does not say. */
  kubernetesVersion: string
}

/** The ticket is unusable; the node asks again. */
export class BadTicketError extends Error {
  constructor(message: string) {
    super(`join ticket unusable: ${message}`)
    this.name = 'BadTicketError'
  }
}

export interface TicketExpectations {
  controlPlane: boolean
  /** The public key of the CSR this node sent: the kubelet certificate must certify exactly it. */
  kubeletKey: KeyObject
}

export function checkJoinTicket(res: IssueJoinTicketResponse, want: TicketExpectations): JoinTicket {
  const length = (field: string, value: Buffer, bytes: number) => {
    if (value.length !== bytes) throw new BadTicketError(`${field}: ${value.length} bytes, want ${bytes}`)
  }
  length('state_disk_key', res.stateDiskKey, STATE_DISK_KEY_BYTES)
  length('measurement_secret', res.measurementSecret, MEASUREMENT_SECRET_BYTES)
  length('measurement_salt', res.measurementSalt, MEASUREMENT_SALT_BYTES)
  if (!BOOTSTRAP_TOKEN_PATTERN.test(res.token))
    throw new BadTicketError('token: not a kubeadm bootstrap token')
  if (!CA_CERT_HASH.test(res.discoveryTokenCaCertHash))
    throw new BadTicketError(
      `discovery_token_ca_cert_hash: ${JSON.stringify(res.discoveryTokenCaCertHash.slice(0, 80))} is not sha256:<64 hex digits>`,
    )
  try {
    parseHostPort(res.apiServerEndpoint, { requirePort: true })
  } catch {
    throw new BadTicketError(
      `api_server_endpoint: ${JSON.stringify(res.apiServerEndpoint.slice(0, 80))} is not HOST:PORT`,
    )
  }
  checkKubeletCert(res.kubeletCert, want.kubeletKey)
  if (res.kubernetesVersion !== '' && !/^v\d+\.\d+\.\d+$/.test(res.kubernetesVersion))
    throw new BadTicketError(
      `kubernetes_version: ${JSON.stringify(res.kubernetesVersion.slice(0, 40))} is not vX.Y.Z`,
    )
  const files = want.controlPlane ? checkControlPlaneFiles(res.controlPlaneFiles) : { pki: [], service: [] }
  return {
    diskKey: res.stateDiskKey,
    measurementSalt: res.measurementSalt,
    measurementSecret: res.measurementSecret,
    kubeletCertPem: res.kubeletCert.toString('utf8'),
    apiServerEndpoint: res.apiServerEndpoint,
    token: res.token,
    caCertHash: res.discoveryTokenCaCertHash,
    controlPlaneFiles: files.pki,
    serviceFiles: files.service,
    components: res.kubernetesComponents,
    kubernetesVersion: res.kubernetesVersion,
  }
}

function checkKubeletCert(pem: Buffer, key: KeyObject): void {
  let cert: X509Certificate
  try {
    cert = new X509Certificate(pem)
  } catch (err) {
    throw new BadTicketError(
      `kubelet_cert: not a PEM certificate (${err instanceof Error ? err.message : ''})`,
    )
  }
  if (!cert.publicKey.equals(key)) throw new BadTicketError('kubelet_cert: certifies another key than ours')
}

const SERVICE_FOLDER = 'constellation/'
/** Without these a control plane could not serve joins: every control plane runs a key service. */
const REQUIRED_SERVICE_FILES: readonly ControlPlaneServiceFileName[] = [
  'constellation/mastersecret',
  'constellation/salt',
]

const isServiceFileName = (name: string): name is ControlPlaneServiceFileName =>
  Object.hasOwn(CONTROL_PLANE_SERVICE_FILES, name)

/** Splits the files into kubeadm PKI and the service files of the naming contract (paths.ts). */
function checkControlPlaneFiles(files: IssueJoinTicketResponse['controlPlaneFiles']): {
  pki: PkiFile[]
  service: JoinTicket['serviceFiles']
} {
  const pki: PkiFile[] = []
  const service: JoinTicket['serviceFiles'] = []
  for (const { name, data } of files) {
    const shown = JSON.stringify(name.slice(0, 80))
    const problem = pkiFileNameProblem(name)
    if (problem) throw new BadTicketError(`control_plane_files: ${shown}: ${problem}`)
    if (isServiceFileName(name)) service.push({ name, data })
    else if (name.startsWith(SERVICE_FOLDER))
      throw new BadTicketError(`control_plane_files: ${shown}: not a service file this node knows`)
    else pki.push({ name, data })
  }
  if (pki.length === 0)
    throw new BadTicketError('control_plane_files: no PKI; a control plane needs the cluster CA')
  for (const name of REQUIRED_SERVICE_FILES)
    if (!service.some((f) => f.name === name))
      throw new BadTicketError(`control_plane_files: no ${name}; a control plane runs its own key service`)
  return { pki, service }
}
