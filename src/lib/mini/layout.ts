/**
 * Where a local cluster keeps its files (all under `<workspace>/constellation-mini/`, removed by
 * `mini down`) and the record `mini down` works from. The record is written before anything is
 * started, and again as the cluster grows, so a crashed `mini up` still leaves enough to undo it.
 */
import { mkdir, readdir } from 'node:fs/promises'
import path from 'node:path'
import type { AttestationVariant } from '../attestation/index.js'
import { CliError } from '../errors/index.js'
import { API_SERVER_PORT } from '../contract/index.js'
import { readTextIfPresent, writeSecretFile } from '../system/index.js'
import type { NodeRole } from '../nodeconfig/index.js'
import type { NetworkRecord } from './network.js'
import { cvmStandInFiles } from './cvm.js'
import { localCaFiles } from './tpm-ca.js'

export const MINI_DIR = 'constellation-mini'

/**
 * Every mini node's state-disk keyslot cost: PBKDF2 at cryptsetup's floor. The key is random (256
 * bits), so a slow PBKDF guards nothing; production keeps argon2id (LUKS_KEYSLOT_PBKDF_ARGS).
 */
export const MINI_KEYSLOT_PBKDF = { type: 'pbkdf2', iterations: 1000 } as const

/**
 * Ports every node uses on its own address (Constellation's where it has one). Its TPM and key
 * service have none: they are unix sockets in the node's folder (MiniNodeFiles.sockets), which
 * only the cluster's user can reach.
 */
export const NODE_PORTS = {
  init: 9000,
  recovery: 9999,
  verify: 30081,
  join: 30090,
  apiServer: API_SERVER_PORT,
} as const
export const METADATA_PORT = 8080

export interface MiniNodeRecord {
  name: string
  role: NodeRole
  index: number
  address: string
}

export interface MiniRecord {
  version: 1
  startedAt: string
  network: NetworkRecord
  /** Workspace files `mini up` created, removed again by `mini down` (the rest is MINI_DIR). */
  createdFiles: string[]
  /** Whether `mini up` created the workspace folder itself (then `mini down` removes it if empty). */
  createdWorkspace: boolean
  /** The nodes as they are now: `mini up`'s, then those `mini add` added, less those `mini remove` retired. */
  nodes: MiniNodeRecord[]
  /** Indexes (addresses) of nodes `mini remove` retired: never handed to another node. */
  retiredIndexes?: number[]
  /** What the nodes are: processes under a supervisor (absent: the default) or QEMU VMs. */
  machines?: 'process' | 'vm'
  /** vm: the cached node image the VMs boot from (their overlays name its root disk as backing file). */
  vmImage?: string
  /** How the nodes attest; absent in records from before tpm-ek (then qemu-vtpm). */
  attestation?: AttestationVariant
  /** `mini up --merge-kubeconfig`: what it added to which kubeconfig, for `mini down` to take out. */
  mergedKubeconfig?: { file: string; cluster: string; user: string; context: string }
}

export function miniPaths(workspace: string) {
  const dir = path.join(path.resolve(workspace), MINI_DIR)
  return {
    dir,
    record: path.join(dir, 'mini.json'),
    bin: path.join(dir, 'bin'),
    apiDir: path.join(dir, 'api'),
    apiKubeconfig: path.join(dir, 'api-admin.conf'),
    /** The kubeadm fake's record of every upgrade call, one JSON line each (KUBEADM_FAKE_LOG). */
    kubeadmLog: path.join(dir, 'kubeadm-calls.jsonl'),
    apiLog: path.join(dir, 'apiserver.log'),
    metadataView: path.join(dir, 'metadata.json'),
    metadataLog: path.join(dir, 'metadata.log'),
    /** tpm-ek: the cluster's local CA, the stand-in for its TPMs' manufacturer. */
    tpmCa: localCaFiles(path.join(dir, 'tpm-ca')),
    /** CVM variants: the cluster's stand-in AMD or Intel, which signs every node's reports. */
    cvmStandIn: cvmStandInFiles(path.join(dir, 'cvm-standin')),
    node: (name: string) => nodeFiles(path.join(dir, 'nodes', name)),
  }
}
export type MiniPaths = ReturnType<typeof miniPaths>

function nodeFiles(dir: string) {
  return {
    dir,
    /** The node's local services, each a 0600 socket in the node's 0700 folder. */
    sockets: {
      keyService: path.join(dir, 'keyservice.sock'),
      swtpm: path.join(dir, 'swtpm.sock'),
      swtpmCtrl: path.join(dir, 'swtpm-ctrl.sock'),
      /** The node's supervisor, which its systemctl asks to start units. */
      systemd: path.join(dir, 'systemd.sock'),
    },
    root: path.join(dir, 'root'),
    tpmState: path.join(dir, 'tpm'),
    disk: path.join(dir, 'state-disk.img'),
    config: path.join(dir, 'node-config.yaml'),
    units: path.join(dir, 'systemd', 'units'),
    unitState: path.join(dir, 'systemd', 'state'),
    /** What the node's supervisor runs (machine.ts), and the status of its current boot. */
    machine: path.join(dir, 'systemd', 'machine.json'),
    bootStatus: path.join(dir, 'systemd', 'boot.json'),
    log: (what: string) => path.join(dir, `${what}.log`),
  }
}
export type MiniNodeFiles = ReturnType<typeof nodeFiles>

export async function readMiniRecord(workspace: string): Promise<MiniRecord | undefined> {
  const file = miniPaths(workspace).record
  const text = await readTextIfPresent(file)
  if (text === undefined) return undefined
  try {
    const record = JSON.parse(text) as MiniRecord
    if (record.version !== 1 || !record.network?.id) throw new Error('not a version 1 record')
    return record
  } catch (cause) {
    throw new Error(`${file} is not a mini cluster record`, { cause })
  }
}

/** The cluster's record; a CliError that says how to start one when there is none. */
export async function requireMiniRecord(workspace: string): Promise<MiniRecord> {
  const record = await readMiniRecord(workspace)
  if (!record)
    throw new CliError(`no mini cluster in ${path.resolve(workspace)}`, {
      hint: `\`constellation mini up -C ${workspace}\` starts one`,
    })
  return record
}

/** The record and its node `name`; a CliError that names the cluster's nodes when it has none of that name. */
export async function requireMiniNode(
  workspace: string,
  name: string,
): Promise<{ record: MiniRecord; node: MiniNodeRecord }> {
  const record = await requireMiniRecord(workspace)
  const node = record.nodes.find((n) => n.name === name)
  if (!node)
    throw new CliError(`the mini cluster in ${path.resolve(workspace)} has no node ${JSON.stringify(name)}`, {
      hint: `its nodes: ${record.nodes.map((n) => n.name).join(', ')}`,
    })
  return { record, node }
}

/** Replaces the record atomically: a crash leaves the old one or the new one, never half. */
export async function writeMiniRecord(workspace: string, record: MiniRecord): Promise<void> {
  const file = miniPaths(workspace).record
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
  await writeSecretFile(file, JSON.stringify(record, null, 2) + '\n', 'replace')
}

/** One service's log on a node: what `mini logs` shows. */
export interface NodeLogFile {
  /** bootstrap, state-disk, swtpm, verifyservice, joinservice, keyservice, kubelet, … */
  service: string
  file: string
}

/**
 * A node's log files, by service, sorted: the processes `mini` starts write `<node>/<service>.log`,
 * the units its systemctl starts `<node>/systemd/state/<unit>.service.log`. The one place that
 * knows where a node's logs are: `mini logs` reads only this.
 */
export async function nodeLogFiles(workspace: string, node: string): Promise<NodeLogFile[]> {
  const files = miniPaths(workspace).node(node)
  const list = async (dir: string, suffix: string, name: (base: string) => string) =>
    (await readdir(dir).catch(() => [] as string[]))
      .filter((f) => f.endsWith(suffix))
      .map((f) => ({ service: name(f.slice(0, -suffix.length)), file: path.join(dir, f) }))
  const found = [
    ...(await list(files.dir, '.log', (base) => base)),
    ...(await list(files.unitState, '.service.log', (base) => base.replace(/^constellation-/, ''))),
  ]
  return found.sort((a, b) => a.service.localeCompare(b.service))
}
