/**
 * The eviction subresource of the FakeApiServer TEST DOUBLE (POST
 * /api/v1/namespaces/NS/pods/NAME/eviction, what `kubectl drain` and `constellation node remove`
 * send), decided as kube-apiserver decides it: a pod that no longer runs (Succeeded, Failed,
 * Pending) or that no PodDisruptionBudget selects is deleted; a pod two budgets select is refused
 * (500); a pod whose one budget allows no disruption is refused with 429 TooManyRequests, naming the
 * budget. The fake has no disruption controller, so a budget's `disruptionsAllowed` is computed at
 * the eviction from the pods it selects, as that controller would (healthy = Ready, expected = the
 * pods selected), from `minAvailable` or `maxUnavailable` (a number or a percentage, rounded up).
 */
import type { KubeObject } from './fake-apiserver.js'

interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>
}

interface Budget extends KubeObject {
  spec?: { selector?: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string }
}

interface Pod extends KubeObject {
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }> }
}

/** What the fake does with an eviction: delete the pod and answer, or only answer. */
export type EvictionDecision =
  | { evict: true }
  | {
      evict: false
      code: number
      reason: string
      message: string
      causes?: Array<{ reason: string; message: string }>
    }

/** policy/v1: a nil selector selects nothing, an empty one every pod of the namespace. */
function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels
    const value = labels[e.key] ?? ''
    const ok =
      e.operator === 'In'
        ? has && (e.values ?? []).includes(value)
        : e.operator === 'NotIn'
          ? !has || !(e.values ?? []).includes(value)
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false
    if (!ok) return false
  }
  return true
}

const isReady = (p: Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
const isFinished = (p: Pod) => ['Succeeded', 'Failed'].includes(p.status?.phase ?? '')

/** An int-or-string: a number, or "N%" of `total` rounded up (as the disruption controller rounds). */
function scaled(value: number | string, total: number): number {
  if (typeof value === 'number') return value
  const percent = /^(\d+)%$/.exec(value)
  return percent ? Math.ceil((Number(percent[1]) * total) / 100) : Number(value)
}

/** The budget's status as the disruption controller would write it now. */
export function budgetStatus(budget: Budget, podsInNamespace: readonly Pod[]) {
  const selected = podsInNamespace.filter(
    (p) => !isFinished(p) && selects(budget.spec?.selector, p.metadata.labels ?? {}),
  )
  const expectedPods = selected.length
  const currentHealthy = selected.filter(isReady).length
  const { minAvailable, maxUnavailable } = budget.spec ?? {}
  const desiredHealthy =
    minAvailable !== undefined
      ? scaled(minAvailable, expectedPods)
      : maxUnavailable !== undefined
        ? Math.max(0, expectedPods - scaled(maxUnavailable, expectedPods))
        : expectedPods
  return {
    currentHealthy,
    desiredHealthy,
    expectedPods,
    disruptionsAllowed: Math.max(0, currentHealthy - desiredHealthy),
  }
}

/** Whether to evict `pod`, given the namespace's budgets and pods; `body` is the request's Eviction. */
export function decideEviction(
  pod: Pod,
  body: unknown,
  budgets: readonly Budget[],
  podsInNamespace: readonly Pod[],
): EvictionDecision {
  const named = (body as { metadata?: { name?: string } } | undefined)?.metadata?.name
  if (named !== undefined && named !== pod.metadata.name)
    return {
      evict: false,
      code: 400,
      reason: 'BadRequest',
      message: 'name in URL does not match name in Eviction object',
    }
  // a pod that is not running cannot be disrupted: kube-apiserver deletes it without asking a budget
  if (isFinished(pod) || pod.status?.phase === 'Pending') return { evict: true }
  const mine = budgets.filter((b) => selects(b.spec?.selector, pod.metadata.labels ?? {}))
  if (mine.length > 1)
    return {
      evict: false,
      code: 500,
      reason: 'InternalError',
      message:
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    }
  const [budget] = mine
  if (!budget) return { evict: true }
  const status = budgetStatus(budget, podsInNamespace)
  // an unready pod of a budget that is satisfied anyway is no disruption (IfHealthyBudget)
  if (!isReady(pod) && status.currentHealthy >= status.desiredHealthy) return { evict: true }
  if (status.disruptionsAllowed > 0) return { evict: true }
  return {
    evict: false,
    code: 429,
    reason: 'TooManyRequests',
    message: "Cannot evict pod as it would violate the pod's disruption budget.",
    causes: [
      {
        reason: 'DisruptionBudget',
        message: `The disruption budget ${budget.metadata.name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`,
      },
    ],
  }
}
