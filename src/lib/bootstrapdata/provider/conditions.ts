/**
 * The status a KubeadmConfig reports (capi.md §6): v1beta1's `ready`, `dataSecretName` and
 * conditions with severity; v1beta2's `initialization.dataSecretCreated` and metav1 conditions. A
 * condition keeps its lastTransitionTime while it says the same, so an unchanged status is not
 * written again.
 */
import type { KubeadmConfigObject } from './capi-objects.js'

export type ConditionState =
  { ok: true } | { ok: false; reason: string; message: string; severity?: 'Info' | 'Warning' | 'Error' }

interface Condition {
  type: string
  status: 'True' | 'False'
  reason?: string
  message?: string
  severity?: string
  observedGeneration?: number
  lastTransitionTime: string
}

const rfc3339 = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z')

export function conditionsFor(
  config: KubeadmConfigObject,
  version: 'v1beta1' | 'v1beta2',
  state: { secret: string | undefined; data: ConditionState },
  now: Date,
): Record<string, unknown> {
  const previous = (config.status?.conditions as Condition[] | undefined) ?? []
  const generation = config.metadata.generation
  const make = (type: string, s: ConditionState): Condition => {
    const fresh: Condition = s.ok
      ? { type, status: 'True', ...(version === 'v1beta2' ? { reason: type } : {}), lastTransitionTime: '' }
      : {
          type,
          status: 'False',
          reason: s.reason,
          message: s.message,
          ...(version === 'v1beta1' ? { severity: s.severity ?? 'Warning' } : {}),
          lastTransitionTime: '',
        }
    if (version === 'v1beta2' && generation !== undefined) fresh.observedGeneration = generation
    const before = previous.find((c) => c.type === type)
    const same =
      before !== undefined &&
      before.status === fresh.status &&
      before.reason === fresh.reason &&
      before.message === fresh.message
    fresh.lastTransitionTime = same ? before.lastTransitionTime : rfc3339(now)
    return fresh
  }
  const certificates: ConditionState = { ok: true }
  const conditions = [
    make('Ready', state.data),
    make('CertificatesAvailable', certificates),
    make('DataSecretAvailable', state.data),
  ]
  const ready = state.secret !== undefined
  if (version === 'v1beta1') {
    return {
      ...(config.status ?? {}),
      ready,
      ...(ready ? { dataSecretName: state.secret } : {}),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      conditions,
    }
  }
  return {
    ...(config.status ?? {}),
    ...(ready ? { dataSecretName: state.secret } : {}),
    initialization: { dataSecretCreated: ready },
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
  }
}
