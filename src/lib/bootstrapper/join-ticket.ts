/**
 * What a join ticket must hold before the node commits to it. Every check runs before the node
 * lock: a ticket the node cannot use costs one more request, not the node. Messages name the field
 * and never its secret value.
 */
import { X509Certificate, type KeyObject } from 'node:crypto'
import type { IssueJoinTicketResponse } from '../../gen/join.js'
import { MEASUREMENT_SALT_BYTES } from '../attestation/index.js'
import { parseHostPort } from '../system/index.js'
import type { Component } from './installer.js'
import { pkiFileNameProblem, type PkiFile } from './pki-files.js'

/** Constellation's StateDiskKeyLength and the measurement secret's length. */
export const JOIN_SECRET_BYTES = 32
const BOOTSTRAP_TOKEN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/
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
  components: Component[]
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
  length('state_disk_key', res.stateDiskKey, JOIN_SECRET_BYTES)
  length('measurement_secret', res.measurementSecret, JOIN_SECRET_BYTES)
  length('measurement_salt', res.measurementSalt, MEASUREMENT_SALT_BYTES)
  if (!BOOTSTRAP_TOKEN.test(res.token)) throw new BadTicketError('token: not a kubeadm bootstrap token')
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
  return {
    diskKey: res.stateDiskKey,
    measurementSalt: res.measurementSalt,
    measurementSecret: res.measurementSecret,
    kubeletCertPem: res.kubeletCert.toString('utf8'),
    apiServerEndpoint: res.apiServerEndpoint,
    token: res.token,
    caCertHash: res.discoveryTokenCaCertHash,
    controlPlaneFiles: want.controlPlane ? checkControlPlaneFiles(res.controlPlaneFiles) : [],
    components: res.kubernetesComponents,
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

function checkControlPlaneFiles(files: IssueJoinTicketResponse['controlPlaneFiles']): PkiFile[] {
  if (files.length === 0)
    throw new BadTicketError('control_plane_files: none; a control plane needs the cluster CA')
  for (const f of files) {
    const problem = pkiFileNameProblem(f.name)
    if (problem)
      throw new BadTicketError(`control_plane_files: ${JSON.stringify(f.name.slice(0, 80))}: ${problem}`)
  }
  return files.map((f) => ({ name: f.name, data: f.data }))
}
