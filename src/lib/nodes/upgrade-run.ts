/**
 * Running a Kubernetes upgrade, one node at a time in the plan's order: the target's components are
 * written for the join service first (a node that joins meanwhile gets the version the cluster is
 * moving to), then per node: cordon, drain, ask its upgrade agent (the request annotation), wait for
 * the agent's answer and for the Node to be Ready at the target, uncordon. A node that fails is left
 * cordoned with the agent's reason, unless the agent says nothing on it changed (a bad hash), and
 * the rest stop: the record says failed, never done. Ctrl-C leaves the record running; the same
 * command resumes it (nodes at the target are not touched again, a step in flight is waited for).
 */
import { CliError, ExitCode, UsageError, messageOf } from '../errors/index.js'
import {
  COMPONENTS_NAMESPACE,
  UPGRADE_REQUEST_ANNOTATION,
  UPGRADE_STATUS_ANNOTATION,
  componentsConfigMapName,
  encodeRequest,
  parseStatus,
  requestId,
  type AgentStatus,
} from '../nodeupgrade/index.js'
import { formatDuration } from '../system/index.js'
import { encodeComponents } from '../versions/index.js'
import { drainNode, type DrainClock } from './drain.js'
import type { KubernetesUpgradeApi, KubernetesUpgradePlan, PlannedNode } from './upgrade-plan.js'
import { writeUpgradeRecord, type UpgradeRecord } from './upgrade-record.js'

export const DEFAULT_NODE_UPGRADE_TIMEOUT_MS = 20 * 60_000
/** How often the agent's answer and the Node are read while a node's step runs. */
export const UPGRADE_WATCH_INTERVAL_MS = 1_000

export interface RunDeps {
  api: KubernetesUpgradeApi
  clock: DrainClock & { date(): Date }
  /** Asks the operator; undefined when nobody can answer (no TTY). */
  confirm?: (question: string) => Promise<boolean>
  progress: (line: string) => void
}

export interface RunOptions {
  yes: boolean
  drainTimeoutMs: number
  /** How long one node's step may take, from its request to Ready at the target. */
  nodeTimeoutMs: number
}

export type NodeOutcome = 'upgraded' | 'already at target' | 'failed' | 'not reached'

export interface KubernetesUpgradeReport {
  id: string
  from: string
  target: string
  declined: boolean
  resumed: boolean
  nodes: Array<{ name: string; role: string; step: string; outcome: NodeOutcome }>
  failure?: { node: string; phase?: string; message: string; cordoned: boolean }
}

export async function runKubernetesUpgrade(
  plan: KubernetesUpgradePlan,
  opts: RunOptions,
  deps: RunDeps,
): Promise<KubernetesUpgradeReport> {
  const report: KubernetesUpgradeReport = {
    id: plan.id,
    from: plan.from,
    target: plan.target,
    declined: false,
    resumed: plan.resumes !== undefined,
    nodes: plan.nodes.map((n) => ({
      name: n.name,
      role: n.role,
      step: n.step,
      outcome: n.action === 'done' ? 'already at target' : 'not reached',
    })),
  }
  const todo = plan.nodes.filter((n) => n.action !== 'done')
  if (todo.length === 0 && plan.resumes === undefined) return report
  if (todo.length > 0 && !(await confirmed(plan, opts.yes, deps))) return { ...report, declined: true }
  const { api } = deps
  const stamp = () => deps.clock.date().toISOString()
  const record: UpgradeRecord = {
    id: plan.id,
    from: plan.from,
    target: plan.target,
    componentsDigest: plan.componentsDigest,
    state: 'running',
    startedAt: plan.resumes?.startedAt ?? stamp(),
    updatedAt: stamp(),
    order: plan.nodes.map((n) => ({ node: n.name, step: n.step })),
    nodes: { ...plan.resumes?.nodes },
  }
  // before any node moves: a control plane's join service reads the components of the version it is at
  deps.progress(`recording the components of ${plan.target} for joining nodes`)
  await api.applyConfigMap(COMPONENTS_NAMESPACE, componentsConfigMapName(plan.target), {
    components: encodeComponents(plan.components),
  })
  await writeUpgradeRecord(api, record)
  for (const node of todo) {
    const entry = report.nodes.find((n) => n.name === node.name)!
    try {
      if (node.action === 'uncordon') {
        deps.progress(`${node.name}: at ${plan.target} (its step finished after an interrupt): uncordon`)
        await api.uncordon(node.name)
      } else await upgradeOne(node, plan, opts, deps)
    } catch (err) {
      if (!(err instanceof NodeStepFailed)) throw err
      entry.outcome = 'failed'
      report.failure = { node: node.name, phase: err.phase, message: err.message, cordoned: err.cordoned }
      record.state = 'failed'
      record.failure = { node: node.name, phase: err.phase, message: err.message }
      record.nodes[node.name] = {
        state: 'failed',
        at: stamp(),
        message: err.message,
        ...(err.phase && { phase: err.phase }),
        ...(err.nodeChanged !== undefined && { nodeChanged: err.nodeChanged }),
      }
      record.updatedAt = stamp()
      await writeUpgradeRecord(api, record)
      return report
    }
    entry.outcome = 'upgraded'
    record.nodes[node.name] = { state: 'succeeded', at: stamp() }
    record.updatedAt = stamp()
    await writeUpgradeRecord(api, record)
  }
  record.state = 'succeeded'
  delete record.failure
  record.updatedAt = stamp()
  await writeUpgradeRecord(api, record)
  return report
}

/** A node's step failed: the agent's phase and words, and whether the node was left cordoned. */
class NodeStepFailed extends Error {
  constructor(
    message: string,
    readonly phase: string | undefined,
    readonly nodeChanged: boolean | undefined,
    readonly cordoned: boolean,
  ) {
    super(message)
    this.name = 'NodeStepFailed'
  }
}

async function upgradeOne(
  node: PlannedNode,
  plan: KubernetesUpgradePlan,
  opts: RunOptions,
  deps: RunDeps,
): Promise<void> {
  const { api, clock } = deps
  const say = (line: string) => deps.progress(`${node.name}: ${line}`)
  say('cordon')
  await api.cordon(node.name)
  say('drain')
  await drainNode(node.name, api, clock, {
    timeoutMs: opts.drainTimeoutMs,
    progress: (line) => say(line),
    rerun: `\`constellation upgrade apply --kubernetes ${plan.target}\``,
  }).catch((err: unknown) => {
    // nothing on the node changed, but pods are partly gone: it stays cordoned, as kubectl drain leaves it
    throw new NodeStepFailed(messageOf(err), 'drain', false, true)
  })
  const id = await sendRequest(node, plan, api)
  say(
    `${node.step === 'apply' ? 'kubeadm upgrade apply' : 'kubeadm upgrade node'} ${plan.target} (request ${id})`,
  )
  const deadline = clock.now() + opts.nodeTimeoutMs
  const status = await waitForAnswer(node.name, id, deadline, opts.nodeTimeoutMs, deps)
  if (status.state === 'failed') {
    const message = status.message ?? 'the upgrade agent reported a failure without a reason'
    const changed = status.nodeChanged !== false
    if (!changed) await api.uncordon(node.name)
    throw new NodeStepFailed(message, status.phase, status.nodeChanged, changed)
  }
  say(`waiting for it to be Ready at ${plan.target}`)
  await waitForReady(node.name, plan.target, deadline, opts.nodeTimeoutMs, deps)
  say('uncordon')
  await api.uncordon(node.name)
}

/**
 * The request for this node, or the one of this upgrade already there when its agent has not
 * answered it with a failure (a resumed run waits for a step in flight instead of starting it again).
 */
async function sendRequest(
  node: PlannedNode,
  plan: KubernetesUpgradePlan,
  api: KubernetesUpgradeApi,
): Promise<string> {
  const prefix = `${plan.id}/${node.name}/`
  const current = await api.getNode(node.name)
  const previous = requestId(current?.annotations[UPGRADE_REQUEST_ANNOTATION] ?? '')
  const status = parseStatus(current?.annotations[UPGRADE_STATUS_ANNOTATION])
  if (previous.startsWith(prefix)) {
    const answeredFailed = status?.id === previous && status.state === 'failed'
    if (!answeredFailed) return previous
  }
  const attempt = previous.startsWith(prefix) ? Number(previous.slice(prefix.length)) + 1 || 1 : 1
  const id = `${prefix}${attempt}`
  const request = encodeRequest({
    id,
    kubernetesVersion: plan.target,
    step: node.step,
    components: plan.components,
  })
  await api.annotateNode(node.name, UPGRADE_REQUEST_ANNOTATION, request)
  return id
}

async function waitForAnswer(
  name: string,
  id: string,
  deadline: number,
  timeoutMs: number,
  deps: RunDeps,
): Promise<AgentStatus> {
  let lastPhase = ''
  for (;;) {
    const node = await deps.api.getNode(name)
    if (!node)
      throw new NodeStepFailed(`Node ${name} disappeared during its upgrade`, undefined, undefined, false)
    const status = parseStatus(node.annotations[UPGRADE_STATUS_ANNOTATION])
    if (status?.id === id) {
      if (status.state !== 'running') return status
      const phase = status.phase ?? 'running'
      if (phase !== lastPhase)
        deps.progress(
          `${name}: its upgrade agent is running the step${status.phase ? ` (${status.phase})` : ''}`,
        )
      lastPhase = phase
    }
    if (deps.clock.now() + UPGRADE_WATCH_INTERVAL_MS > deadline)
      throw new NodeStepFailed(
        `its upgrade agent did not finish request ${id} within ${formatDuration(timeoutMs)}${status?.id === id ? ' (it is still running)' : ' (it never picked it up: is constellation-upgrade-agent.service running on it?)'}`,
        'timeout',
        undefined,
        true,
      )
    await deps.clock.sleep(UPGRADE_WATCH_INTERVAL_MS)
  }
}

async function waitForReady(
  name: string,
  target: string,
  deadline: number,
  timeoutMs: number,
  deps: RunDeps,
): Promise<void> {
  for (;;) {
    const node = await deps.api.getNode(name)
    if (node?.ready && node.kubeletVersion === target) return
    if (deps.clock.now() + UPGRADE_WATCH_INTERVAL_MS > deadline)
      throw new NodeStepFailed(
        `its step succeeded, but within ${formatDuration(timeoutMs)} the Node was not Ready at ${target} (ready: ${node?.ready ?? 'no Node'}, kubelet ${node?.kubeletVersion ?? 'unknown'})`,
        'kubelet',
        true,
        true,
      )
    await deps.clock.sleep(UPGRADE_WATCH_INTERVAL_MS)
  }
}

async function confirmed(plan: KubernetesUpgradePlan, yes: boolean, deps: RunDeps): Promise<boolean> {
  if (yes) return true
  if (!deps.confirm)
    throw new UsageError(
      `refusing to upgrade Kubernetes to ${plan.target} without confirmation: this is not an interactive terminal`,
      'review the plan above, then rerun with --yes; nothing was changed',
    )
  return deps.confirm(`Upgrade the cluster's Kubernetes to ${plan.target}, node by node?`)
}

/** The error that ends a failed upgrade: the report stays the result. */
export function upgradeFailed(report: KubernetesUpgradeReport): CliError | undefined {
  const f = report.failure
  if (!f) return undefined
  return new CliError(
    `upgrading ${f.node} to ${report.target} failed${f.phase ? ` (${f.phase})` : ''}: ${f.message}`,
    {
      exitCode: ExitCode.Failure,
      hint: f.cordoned
        ? `${f.node} stays cordoned and no node after it was touched; fix the cause (its upgrade agent's log: journalctl -u constellation-upgrade-agent), then run \`constellation upgrade apply --kubernetes ${report.target}\` again to resume`
        : `nothing on ${f.node} changed and it is schedulable again; no node after it was touched; fix the cause, then run \`constellation upgrade apply --kubernetes ${report.target}\` again`,
      data: { ...report },
    },
  )
}
