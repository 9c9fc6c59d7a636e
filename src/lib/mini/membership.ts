/**
 * `mini add` and `mini remove`: a machine added to or retired from a running local cluster, as a
 * cloud would do it. An added node gets the next address of the cluster's network, its own TPM
 * (manufactured like the others for tpm-ek; served reports by the cluster's stand-in vendor for the
 * CVM variants), an instance in the metadata service, and then boots and joins through the join
 * service like any other. A removed node is retired from the cluster first (`node remove`: drain,
 * etcd, the Node, its disk records and tokens), then powered off and its files deleted. The record
 * (layout.ts) follows, so that status, logs, reboot and down know the cluster's nodes.
 */
import { readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { ATTESTATION_CONFIG_KEYS } from '../config/index.js'
import { CliError, UsageError } from '../errors/index.js'
import type { NodeAdmin } from '../kube/index.js'
import type { NodeMember, NodeRole } from '../nodeconfig/index.js'
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  NodeNotFoundError,
  planNodeRemoval,
  removeNode,
  renderRemovalPlan,
  type RemovalReport,
} from '../nodes/index.js'
import { writeSecretFile } from '../system/index.js'
import { parseYaml } from '../yaml/index.js'
import { waitUntilBooted } from './boot-watch.js'
import { bootContext, recoverCommand, refuseLongSocketPaths, type MiniIo } from './cluster.js'
import { simulatedEtcd } from './etcd.js'
import {
  miniPaths,
  NODE_PORTS,
  requireMiniNode,
  requireMiniRecord,
  writeMiniRecord,
  type MiniNodeRecord,
  type MiniPaths,
  type MiniRecord,
} from './layout.js'
import { miniNetwork, removeNodeNetwork } from './network.js'
import { miniAttestation, powerOffNode, powerOnNode, provisionNode } from './node-boot.js'
import { manufactureTpm } from './tpm-ca.js'
import type { MetadataView } from './metadata-server.js'
import { waitForPort } from './wait.js'

/** A node name as Kubernetes takes it (an RFC 1123 label), short enough for the node's socket paths. */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/
/** Addresses are `<prefix>.<index + 2>` in a /24. */
const MAX_NODE_INDEX = 252

async function updateMetadataView(paths: MiniPaths, change: (members: NodeMember[]) => NodeMember[]) {
  const view = JSON.parse(await readFile(paths.metadataView, 'utf8')) as MetadataView
  const next: MetadataView = { ...view, members: change([...view.members]) }
  // the metadata service reads the file on every request: the change is seen at once
  await writeSecretFile(paths.metadataView, JSON.stringify(next, null, 2) + '\n', 'replace')
}

/** A CVM variant's config section as the cluster's nodes have it (absolute paths to the stand-in). */
async function cvmSectionOf(record: MiniRecord, paths: MiniPaths): Promise<Record<string, unknown>> {
  const variant = record.attestation ?? 'qemu-vtpm'
  const first = record.nodes[0]
  if (!first || !('standInKeys' in miniAttestation(variant, paths))) return {}
  const file = paths.node(first.name).config
  const config = parseYaml(await readFile(file, 'utf8'), file).value as {
    attestation?: Record<string, Record<string, unknown>>
  }
  const key = ATTESTATION_CONFIG_KEYS[variant]
  return config.attestation?.[key] ?? {}
}

const NOTHING_REMOVED: RemovalReport = {
  node: '',
  declined: false,
  cordoned: false,
  evicted: [],
  kept: [],
  nodeDeleted: false,
  diskRecordsDeleted: [],
  bootstrapTokensDeleted: [],
}

async function confirmed(node: string, yes: boolean, confirm?: (q: string) => Promise<boolean>) {
  if (yes) return true
  if (!confirm)
    throw new UsageError(
      `refusing to remove ${node} without confirmation: this is not an interactive terminal`,
      'review the plan above, then rerun with --yes; nothing was changed',
    )
  return confirm(`Power ${node} off and delete its files?`)
}

/** Adding and removing VM nodes is not built yet: said before anything changes. */
function refuseVmCluster(record: MiniRecord, command: string, workspace: string) {
  if (record.machines === 'vm')
    throw new CliError(
      `${command}: the cluster in ${workspace} runs its nodes as VMs, and ${command} handles process nodes only (for now)`,
      {
        hint: 'nothing was changed; a cluster of the size you need comes from mini up --machines vm',
      },
    )
}

export interface MiniAddOptions {
  workspace: string
  name: string
  role: NodeRole
  timeoutMs: number
  signal?: AbortSignal
}

/** Boots a new node into the running cluster and waits until it has joined. */
export async function addMiniNode(opts: MiniAddOptions, io: MiniIo): Promise<MiniNodeRecord> {
  const workspace = path.resolve(opts.workspace)
  const record = await requireMiniRecord(workspace)
  refuseVmCluster(record, 'mini add', workspace)
  if (!NODE_NAME.test(opts.name))
    throw new UsageError(
      `node name ${JSON.stringify(opts.name)} is not a lower-case RFC 1123 label of at most 32 characters`,
      'e.g. worker-2 or control-plane-1',
    )
  if (record.nodes.some((n) => n.name === opts.name))
    throw new CliError(`the mini cluster in ${workspace} has a node ${opts.name} already`, {
      hint: `its nodes: ${record.nodes.map((n) => n.name).join(', ')}; nothing was changed`,
    })
  refuseLongSocketPaths(workspace, [opts.name])
  // an index is never reused: a retired node's address is not handed to another machine
  const index = Math.max(-1, ...record.nodes.map((n) => n.index), ...(record.retiredIndexes ?? [])) + 1
  if (index > MAX_NODE_INDEX)
    throw new CliError(`the cluster's network ${record.network.prefix}.0/24 is full`)
  const network = miniNetwork(record.network, io.runner)
  const node: MiniNodeRecord = {
    name: opts.name,
    role: opts.role,
    index,
    address: network.nodeAddress(index),
  }
  const paths = miniPaths(workspace)
  const files = paths.node(node.name)
  // recorded first: `mini down` removes whatever of it is started from here on
  await writeMiniRecord(workspace, { ...record, nodes: [...record.nodes, node] })
  io.progress(`${node.name}: a new ${node.role} at ${node.address}`)
  await network.addNode(index)
  const ctx = bootContext(record, paths, io)
  const variant = record.attestation ?? 'qemu-vtpm'
  const attested = { ...ctx, attestation: miniAttestation(variant, paths, await cvmSectionOf(record, paths)) }
  await provisionNode(attested, node, files)
  if (variant === 'tpm-ek') {
    io.progress(`${node.name}: manufacturing its TPM with an EK certificate from the cluster's local CA`)
    await manufactureTpm(io.runner, files.tpmState, paths.tpmCa, ctx.env)
  }
  await updateMetadataView(paths, (members) => [
    ...members,
    { name: node.name, role: node.role, vpcIP: node.address },
  ])
  io.progress(
    `${node.name}: listed by the metadata service; booting (state-disk setup, bootstrap run, its join)`,
  )
  const boot = await powerOnNode(attested, node, files, record.network.id)
  await waitUntilBooted(boot, {
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    progress: io.progress,
    recoverCommand: recoverCommand(opts.workspace, node),
  })
  if (node.role === 'control-plane')
    await waitForPort(node.address, NODE_PORTS.join, {
      what: `${node.name}'s join service`,
      log: path.join(files.unitState, 'constellation-joinservice.service.log'),
    })
  return node
}

export interface MiniRemoveOptions {
  workspace: string
  name: string
  yes: boolean
  drainTimeoutMs?: number
}

export interface MiniRemoveDeps {
  io: MiniIo
  openNodeAdmin: (kubeconfig: string) => Promise<NodeAdmin>
  kubeconfig: string
  confirm?: (question: string) => Promise<boolean>
  /** Shows the plan before the confirmation. */
  showPlan: (text: string) => void
}

export interface MiniRemoveResult {
  node: MiniNodeRecord
  removal: RemovalReport
  removed: string[]
}

/** Retires the node from the cluster (`node remove`), powers it off and deletes its files. */
export async function removeMiniNode(
  opts: MiniRemoveOptions,
  deps: MiniRemoveDeps,
): Promise<MiniRemoveResult> {
  const workspace = path.resolve(opts.workspace)
  const { record, node } = await requireMiniNode(workspace, opts.name)
  refuseVmCluster(record, 'mini remove', workspace)
  const api = await deps.openNodeAdmin(deps.kubeconfig)
  const removalDeps = {
    api,
    etcd: simulatedEtcd(api),
    clock: { now: () => Date.now(), sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) },
    confirm: deps.confirm,
    progress: deps.io.progress,
  }
  // a node `node remove` retired already: only its machine is left
  const plan = await planNodeRemoval(node.name, removalDeps).catch((err: unknown) => {
    if (err instanceof NodeNotFoundError) return undefined
    throw err
  })
  // the first node's namespace holds the simulated API server, and its address is the endpoint
  if (node.index === record.nodes[0]?.index)
    throw new CliError(
      `refusing to remove ${node.name}: it hosts this mini cluster's SIMULATED Kubernetes API and its address is the cluster endpoint`,
      { hint: 'remove another control plane; nothing was changed' },
    )
  const machine = `power ${node.name} off and delete its files (${miniPaths(workspace).node(node.name).dir})`
  let removal: RemovalReport
  if (plan) {
    deps.showPlan(`${renderRemovalPlan(plan)}\n  6. ${machine}`)
    removal = await removeNode(
      plan,
      { yes: opts.yes, drainTimeoutMs: opts.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS },
      removalDeps,
    )
  } else {
    deps.showPlan(`${node.name} is in the cluster no more (no Node, no disk record): ${machine}`)
    const declined = !(await confirmed(node.name, opts.yes, deps.confirm))
    removal = { ...NOTHING_REMOVED, node: node.name, declined }
  }
  if (removal.declined) return { node, removal, removed: [] }
  deps.io.progress(`${node.name}: powering off`)
  await powerOffNode(record.network.id, node.name)
  const paths = miniPaths(workspace)
  const removed = await removeNodeNetwork(record.network, node.index, deps.io.runner)
  await rm(paths.node(node.name).dir, { recursive: true, force: true })
  removed.push(paths.node(node.name).dir)
  await updateMetadataView(paths, (members) => members.filter((m) => m.name !== node.name))
  const now = await requireMiniRecord(workspace)
  await writeMiniRecord(workspace, {
    ...now,
    nodes: now.nodes.filter((n) => n.name !== node.name),
    retiredIndexes: [...(now.retiredIndexes ?? []), node.index],
  })
  return { node, removal, removed }
}
