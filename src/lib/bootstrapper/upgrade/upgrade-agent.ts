/**
 * The node's upgrade agent: it watches its own Node object for an upgrade request and runs this
 * node's step (node-upgrade.ts), reporting in the same object (the annotations: nodeupgrade/).
 * No port, no socket, no SSH: the operator's CLI reaches nodes only through the API server, and a
 * kubelet's credentials may read and patch its own Node, so every node (a worker too) can take part
 * with what it already holds.
 *
 * A request is done once its status has the same id and a final state; a status left `running` (the
 * agent or the node stopped mid-step) is run again: `kubeadm upgrade apply/node` of the same version
 * is repeatable, and a node the step already moved is simply moved again.
 */
import { chainMessage, messageOf } from '../../errors/index.js'
import type { NodeAnnotationsApi } from '../../kube/index.js'
import type { Logger } from '../../system/index.js'
import {
  UPGRADE_REQUEST_ANNOTATION,
  UPGRADE_STATUS_ANNOTATION,
  parseRequest,
  parseStatus,
  requestId,
  type AgentRequest,
  type AgentStatus,
  type NodeUpgradeRequest,
} from '../../nodeupgrade/index.js'
import { NodeUpgradeError, type NodeUpgradeResult } from './node-upgrade.js'

export const UPGRADE_POLL_INTERVAL_MS = 5_000
/** Annotations share 256 KiB per object: the status quotes the end of kubeadm's output only. */
const MAX_STATUS_OUTPUT_CHARS = 4 * 1024

export interface UpgradeAgentDeps {
  /** This node's name in Kubernetes. */
  node: string
  /** Opened when first needed: a node that has not joined yet has no kubeconfig. */
  annotations: () => Promise<NodeAnnotationsApi>
  upgrade: (req: NodeUpgradeRequest) => Promise<NodeUpgradeResult>
  log: Logger
  clock: () => Date
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  pollIntervalMs?: number
}

export class UpgradeAgent {
  private readonly stopped = new AbortController()
  private loop?: Promise<void>
  private api?: NodeAnnotationsApi
  private lastError = ''
  private resolveDone!: () => void
  /** Resolves once the agent has stopped. */
  readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve))

  constructor(private readonly deps: UpgradeAgentDeps) {}

  start(): Promise<void> {
    this.loop ??= this.run()
    return Promise.resolve()
  }

  /** Lets a step in flight finish (it must not be cut in half), then returns. */
  async stop(): Promise<void> {
    this.stopped.abort(new Error('the upgrade agent is stopping'))
    await this.loop
    this.resolveDone()
  }

  private async run(): Promise<void> {
    const interval = this.deps.pollIntervalMs ?? UPGRADE_POLL_INTERVAL_MS
    while (!this.stopped.signal.aborted) {
      try {
        await this.checkOnce()
        this.lastError = ''
      } catch (err) {
        const message = chainMessage(err)
        // once per kind of failure (a node that has not joined yet says so every poll)
        if (message !== this.lastError)
          this.deps.log.warn('Checking for an upgrade failed', { error: message })
        this.lastError = message
      }
      await this.deps.sleep(interval, this.stopped.signal).catch(() => {})
    }
  }

  /** Reads the request; runs it unless its status says it is done. Returns the status written, if any. */
  async checkOnce(): Promise<AgentStatus | undefined> {
    this.api ??= await this.deps.annotations()
    const annotations = await this.api.get(this.deps.node)
    if (!annotations) throw new Error(`Node ${this.deps.node} is not registered (yet)`)
    const raw = annotations[UPGRADE_REQUEST_ANNOTATION]
    if (raw === undefined) return undefined
    const status = parseStatus(annotations[UPGRADE_STATUS_ANNOTATION])
    let req: AgentRequest
    try {
      req = parseRequest(raw)
    } catch (err) {
      const id = requestId(raw)
      if (status?.id === id && status.state === 'failed') return undefined
      return this.report({
        id,
        state: 'failed',
        kubernetesVersion: '',
        step: '',
        phase: 'request',
        message: messageOf(err),
        nodeChanged: false,
      })
    }
    if (status?.id === req.id && status.state !== 'running') return undefined
    const base = { id: req.id, kubernetesVersion: req.kubernetesVersion, step: req.step }
    if (status?.id === req.id) this.deps.log.warn('Resuming an upgrade step that was interrupted', base)
    await this.report({ ...base, state: 'running' })
    try {
      const result = await this.deps.upgrade(req)
      return await this.report({ ...base, state: 'succeeded', kubeadmOutput: tail(result.kubeadmOutput) })
    } catch (err) {
      const failure = err instanceof NodeUpgradeError ? err : undefined
      this.deps.log.error('Upgrade step failed', { ...base, error: chainMessage(err) })
      return await this.report({
        ...base,
        state: 'failed',
        phase: failure?.phase ?? 'unknown',
        // a step's own error says it all (its cause included); anything else is chained
        message: failure ? failure.message : chainMessage(err),
        nodeChanged: failure?.nodeChanged ?? true,
        ...(failure?.kubeadmOutput && { kubeadmOutput: tail(failure.kubeadmOutput) }),
      })
    }
  }

  private async report(status: Omit<AgentStatus, 'updatedAt'>): Promise<AgentStatus> {
    const full: AgentStatus = { ...status, updatedAt: this.deps.clock().toISOString() }
    await this.api?.merge(this.deps.node, { [UPGRADE_STATUS_ANNOTATION]: JSON.stringify(full) })
    this.deps.log.info('Upgrade status', {
      id: full.id,
      state: full.state,
      kubernetesVersion: full.kubernetesVersion,
    })
    return full
  }
}

const tail = (text: string) =>
  text.length > MAX_STATUS_OUTPUT_CHARS ? '…' + text.slice(-MAX_STATUS_OUTPUT_CHARS) : text
