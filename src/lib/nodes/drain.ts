/**
 * Draining a node as `kubectl drain --ignore-daemonsets --delete-emptydir-data --force` does: every
 * pod on it is evicted through the API's eviction subresource, so PodDisruptionBudgets are honoured
 * (a refused eviction, HTTP 429, is tried again every 5 s, as kubectl does), then the evicted pods
 * are waited for until they are gone. DaemonSet pods stay (their controller would put them back
 * at once, and they go with the Node), and so do static pods' mirrors (the kubelet owns them).
 * The whole drain is bounded: what is still on the node then is named.
 */
import { CliError, ExitCode } from '../errors/index.js'
import { formatDuration } from '../system/index.js'
import type { EvictionAnswer, NodePod } from '../kube/index.js'

/** kubectl drain's pause between refused evictions. */
export const EVICTION_RETRY_INTERVAL_MS = 5_000
/** How often evicted pods are looked for until they are gone. */
export const POD_GONE_POLL_MS = 1_000
export const DEFAULT_DRAIN_TIMEOUT_MS = 120_000

export interface DrainApi {
  podsOn(node: string): Promise<NodePod[]>
  evict(namespace: string, name: string): Promise<EvictionAnswer>
  podExists(namespace: string, name: string, uid: string): Promise<boolean>
}

export interface DrainClock {
  now(): number
  sleep(ms: number): Promise<void>
}

export type PodAction =
  { pod: string; action: 'evict'; note?: string } | { pod: string; action: 'keep'; why: string }

const podName = (p: NodePod) => `${p.namespace}/${p.name}`

/** What draining does with each pod on the node. */
export function drainActions(pods: readonly NodePod[]): PodAction[] {
  return pods.map((p) => {
    if (p.mirror) return { pod: podName(p), action: 'keep', why: 'a static pod: its kubelet runs it' }
    if (p.controllerKind === 'DaemonSet')
      return { pod: podName(p), action: 'keep', why: 'managed by a DaemonSet: it goes with the Node' }
    if (!p.controllerKind && !p.finished)
      return { pod: podName(p), action: 'evict', note: 'no controller: nothing recreates it elsewhere' }
    return { pod: podName(p), action: 'evict' }
  })
}

export interface DrainResult {
  evicted: string[]
  kept: string[]
}

export async function drainNode(
  node: string,
  api: DrainApi,
  clock: DrainClock,
  opts: { timeoutMs: number; progress: (line: string) => void; rerun?: string },
): Promise<DrainResult> {
  const deadline = clock.now() + opts.timeoutMs
  const pods = await api.podsOn(node)
  const actions = drainActions(pods)
  const toEvict = pods.filter((_, i) => actions[i]?.action === 'evict')
  const kept = actions.filter((a) => a.action === 'keep').map((a) => a.pod)
  const blocked = new Map<string, string>()
  const pending = new Set(toEvict)
  const evicted: NodePod[] = []
  for (;;) {
    for (const pod of [...pending]) {
      const answer = await api.evict(pod.namespace, pod.name)
      if (answer.outcome === 'blocked') {
        if (!blocked.has(podName(pod)))
          opts.progress(
            `evicting ${podName(pod)}: ${answer.reason} (trying again every ${formatDuration(EVICTION_RETRY_INTERVAL_MS)})`,
          )
        blocked.set(podName(pod), answer.reason)
        continue
      }
      pending.delete(pod)
      blocked.delete(podName(pod))
      if (answer.outcome === 'evicted') {
        opts.progress(`evicted ${podName(pod)}`)
        evicted.push(pod)
      }
    }
    if (pending.size === 0) break
    if (clock.now() + EVICTION_RETRY_INTERVAL_MS > deadline)
      throw drainTimeout(
        node,
        opts,
        [...pending].map((p) => `${podName(p)} (${blocked.get(podName(p)) ?? 'not evicted'})`),
      )
    await clock.sleep(EVICTION_RETRY_INTERVAL_MS)
  }
  // an evicted pod may take its grace period to go: the node is drained when none is left
  for (;;) {
    const left: NodePod[] = []
    for (const pod of evicted) if (await api.podExists(pod.namespace, pod.name, pod.uid)) left.push(pod)
    if (left.length === 0) break
    if (clock.now() + POD_GONE_POLL_MS > deadline)
      throw drainTimeout(
        node,
        opts,
        left.map((p) => `${podName(p)} (evicted, still terminating)`),
      )
    await clock.sleep(POD_GONE_POLL_MS)
  }
  return { evicted: evicted.map(podName), kept }
}

function drainTimeout(node: string, opts: { timeoutMs: number; rerun?: string }, left: string[]) {
  return new CliError(
    `draining ${node}: still on it after ${formatDuration(opts.timeoutMs)}: ${left.join(', ')}`,
    {
      exitCode: ExitCode.Failure,
      hint: `${node} stays cordoned and nothing else was changed; free the disruption budgets (or scale up), then run ${opts.rerun ?? 'the removal'} again, or give it more time with --drain-timeout`,
    },
  )
}
