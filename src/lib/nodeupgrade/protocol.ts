/**
 * How the operator's CLI and a node's upgrade agent talk: two annotations on the node's own Node
 * object (docs/upgrade.md says why not a socket). The operator writes the request; the agent runs
 * it once and answers in the status. Both sides parse with this module, so neither trusts a shape
 * the other did not write.
 *
 *   upgrade.constellation.edgeless.systems/kubernetes          the request (JSON, the operator's):
 *       {"id": "...", "kubernetesVersion": "v1.32.9", "step": "apply"|"node", "components": [...]}
 *   upgrade.constellation.edgeless.systems/kubernetes-status   the answer (JSON, the agent's):
 *       {"id": "...", "state": "running"|"succeeded"|"failed", "kubernetesVersion", "step",
 *        "phase"?, "message"?, "nodeChanged"?, "kubeadmOutput"?, "updatedAt"}
 */
import { messageOf } from '../errors/index.js'
import type { KubernetesComponent } from '../versions/index.js'

export const UPGRADE_REQUEST_ANNOTATION = 'upgrade.constellation.edgeless.systems/kubernetes'
export const UPGRADE_STATUS_ANNOTATION = 'upgrade.constellation.edgeless.systems/kubernetes-status'

export const NODE_UPGRADE_STEPS = ['apply', 'node'] as const
/** `apply`: the first control plane (`kubeadm upgrade apply`); `node`: every other node. */
export type NodeUpgradeStep = (typeof NODE_UPGRADE_STEPS)[number]

export interface NodeUpgradeRequest {
  /** The target, `vX.Y.Z`. */
  kubernetesVersion: string
  /** Every component of the target version (kubeadm, kubelet, kubectl, image patches, …). */
  components: readonly KubernetesComponent[]
  step: NodeUpgradeStep
}

/** A request as it travels: the operator names it `<upgrade id>/<node>`, so each runs once. */
export interface AgentRequest extends NodeUpgradeRequest {
  id: string
}

export interface AgentStatus {
  id: string
  state: 'running' | 'succeeded' | 'failed'
  kubernetesVersion: string
  step: string
  phase?: string
  message?: string
  /** false: the step failed before anything on the node changed (a download or a bad hash). */
  nodeChanged?: boolean
  kubeadmOutput?: string
  updatedAt: string
}

export function encodeRequest(req: AgentRequest): string {
  return JSON.stringify({
    id: req.id,
    kubernetesVersion: req.kubernetesVersion,
    step: req.step,
    components: req.components,
  })
}

/** The id of a request that may not parse otherwise ('' when it has none). */
export function requestId(raw: string): string {
  try {
    const id = (JSON.parse(raw) as { id?: unknown } | null)?.id
    return typeof id === 'string' ? id : ''
  } catch {
    return ''
  }
}

/** The request's shape; the node's step checks the version and every component again. */
export function parseRequest(raw: string): AgentRequest {
  let doc: unknown
  try {
    doc = JSON.parse(raw)
  } catch (err) {
    throw new Error(`annotation ${UPGRADE_REQUEST_ANNOTATION}: not JSON: ${messageOf(err)}`, { cause: err })
  }
  const where = `annotation ${UPGRADE_REQUEST_ANNOTATION}`
  if (typeof doc !== 'object' || doc === null) throw new Error(`${where}: want a JSON object`)
  const r = doc as Record<string, unknown>
  if (typeof r.id !== 'string' || r.id === '') throw new Error(`${where}: id: want a non-empty string`)
  if (typeof r.kubernetesVersion !== 'string') throw new Error(`${where}: kubernetesVersion: want a string`)
  if (!(NODE_UPGRADE_STEPS as readonly unknown[]).includes(r.step))
    throw new Error(`${where}: step: want one of ${NODE_UPGRADE_STEPS.join(', ')}`)
  if (!Array.isArray(r.components)) throw new Error(`${where}: components: want a list`)
  const components = r.components.map((c: unknown, i): KubernetesComponent => {
    const o = (typeof c === 'object' && c !== null ? c : {}) as Record<string, unknown>
    for (const key of ['url', 'hash', 'installPath'] as const)
      if (typeof o[key] !== 'string') throw new Error(`${where}: components[${i}].${key}: want a string`)
    if (typeof o.extract !== 'boolean')
      throw new Error(`${where}: components[${i}].extract: want true or false`)
    return {
      url: o.url as string,
      hash: o.hash as string,
      installPath: o.installPath as string,
      extract: o.extract,
    }
  })
  return { id: r.id, kubernetesVersion: r.kubernetesVersion, step: r.step as NodeUpgradeStep, components }
}

const STATES: readonly string[] = ['running', 'succeeded', 'failed']

/** The agent's answer; undefined when there is none or it is not one (then it is not believed). */
export function parseStatus(raw: string | undefined): AgentStatus | undefined {
  if (raw === undefined) return undefined
  try {
    const s = JSON.parse(raw) as Partial<AgentStatus> | null
    return typeof s?.id === 'string' && typeof s.state === 'string' && STATES.includes(s.state)
      ? (s as AgentStatus)
      : undefined
  } catch {
    return undefined
  }
}
