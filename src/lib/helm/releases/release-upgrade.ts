/**
 * One release: `helm upgrade --install` with rollback on failure, retried on transient failures
 * (Constellation: 3 retries, 30 s apart). Helm's own rollback shares the upgrade's timeout and can
 * run out of time (helm/helm#8675), so a release left failed or pending gets an explicit rollback
 * with a timeout of its own.
 */
import { chainMessage } from '../../errors/index.js'
import { CommandFailedError, describeRetry, retry, sleepMs } from '../../system/index.js'
import type { Helm, ValuesSource } from '../binary/index.js'
import type { ReleaseTarget } from './releases.js'

/** A release to bring to its target: what is installed now decides install vs upgrade and the rollback. */
export interface ReleaseToApply {
  target: ReleaseTarget
  /** Chart version installed now; undefined when the release does not exist. */
  installed?: string
  /** Its revision: what an explicit rollback goes back to. */
  installedRevision?: number
}

export interface RetryPolicy {
  /** How long helm waits in each attempt, and again in an explicit rollback. */
  timeoutMs: number
  attempts: number
  intervalMs: number
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  /** false: helm neither waits for readiness nor rolls back (init --skip-helm-wait). */
  wait: boolean
  /** Told each retry: which attempt of how many failed, why, and the wait until the next. */
  report: (line: string) => void
}

export const HELM_RETRY_ATTEMPTS = 4
export const HELM_RETRY_INTERVAL_MS = 30_000

export interface ReleaseResult {
  outcome: 'upgraded' | 'installed' | 'rolled-back' | 'rollback-failed'
  reason: string
  attempts: number
  /** Set when the release failed; the sequence stops there. */
  error?: string
}

/** Failures worth another attempt once Helm has put the release back: the cluster was slow or away. */
const TRANSIENT =
  /timed out|deadline exceeded|connection refused|connection reset|i\/o timeout|TLS handshake timeout|ServiceUnavailable|the server is currently unable|etcdserver/i

/** What a retried attempt left, said in its retry line. */
const SETTLED = {
  'helm-rolled-back': 'Helm rolled the release back',
  'install-removed': 'Helm removed the failed install',
  'left-behind': 'the release was left as it is',
  'status-unknown': 'the release status is unknown',
} as const

class AttemptFailure extends Error {
  constructor(
    readonly settled: 'helm-rolled-back' | 'install-removed' | 'left-behind' | 'status-unknown',
    readonly releaseStatus: string | undefined,
    cause: unknown,
    /** Why the status could not be read; helm's own error (the cause) stays first. */
    statusError?: unknown,
  ) {
    const also = statusError
      ? `; reading the release status afterwards failed: ${chainMessage(statusError)}`
      : ''
    super(`${chainMessage(cause)}${also}`, { cause })
  }
}

export async function upgradeRelease(
  helm: Helm,
  release: ReleaseToApply,
  values: ValuesSource,
  policy: Partial<RetryPolicy> & { timeoutMs: number },
): Promise<ReleaseResult> {
  const { target } = release
  const isInstall = release.installed === undefined
  let attempts = 0
  const maxAttempts = policy.attempts ?? HELM_RETRY_ATTEMPTS
  try {
    await retry(
      async () => {
        attempts++
        try {
          await helm.upgrade(target, values, policy.timeoutMs, { wait: policy.wait ?? true })
        } catch (err) {
          const status = await helm.status(target.name, target.namespace).catch((statusErr: unknown) => {
            throw new AttemptFailure('status-unknown', undefined, err, statusErr)
          })
          if (status === undefined) throw new AttemptFailure('install-removed', status, err)
          if (status === 'deployed') throw new AttemptFailure('helm-rolled-back', status, err)
          throw new AttemptFailure('left-behind', status, err)
        }
      },
      {
        attempts: maxAttempts,
        initialDelayMs: policy.intervalMs ?? HELM_RETRY_INTERVAL_MS,
        maxDelayMs: policy.intervalMs ?? HELM_RETRY_INTERVAL_MS,
        // Only retry once Helm has put things back; a half-applied release is never upgraded again.
        retryable: (err) =>
          err instanceof AttemptFailure && err.settled !== 'left-behind' && TRANSIENT.test(err.message),
        sleep: policy.sleep ?? sleepMs,
        onRetry: (err, attempt, delayMs) =>
          policy.report?.(
            `${describeRetry(err, attempt, maxAttempts, delayMs)}${err instanceof AttemptFailure ? ` (${SETTLED[err.settled]})` : ''}`,
          ),
      },
    )
  } catch (err) {
    return failed(helm, release, isInstall, attempts, err, policy.timeoutMs)
  }
  const outcome = isInstall ? 'installed' : 'upgraded'
  const how = isInstall ? `installed ${target.version}` : `${release.installed} → ${target.version}`
  return { outcome, reason: attempts > 1 ? `${how} (after ${attempts} attempts)` : how, attempts }
}

async function failed(
  helm: Helm,
  release: ReleaseToApply,
  isInstall: boolean,
  attempts: number,
  err: unknown,
  timeoutMs: number,
): Promise<ReleaseResult> {
  const { name, namespace } = release.target
  // an AttemptFailure's message already holds its cause's chain
  const error = err instanceof AttemptFailure ? err.message : chainMessage(err)
  if (!(err instanceof AttemptFailure)) {
    return {
      outcome: 'rollback-failed',
      reason: 'unexpected error; check the release by hand',
      attempts,
      error,
    }
  }
  if (err.settled === 'status-unknown') {
    // Rolling back blind could undo Helm's own rollback (back to the failed revision).
    return {
      outcome: 'rollback-failed',
      reason: `the release status could not be read after the failure; check it with \`helm status ${name} -n ${namespace}\``,
      attempts,
      error,
    }
  }
  if (err.settled === 'install-removed') {
    return { outcome: 'rolled-back', reason: 'install failed; Helm removed the release', attempts, error }
  }
  if (err.settled === 'helm-rolled-back') {
    return {
      outcome: 'rolled-back',
      reason:
        err.cause instanceof CommandFailedError && err.cause.timedOut
          ? `helm was stopped at its time bound; the release is deployed at ${release.installed ?? 'its previous revision'}`
          : `Helm rolled back to ${release.installed ?? 'the previous revision'}`,
      attempts,
      error,
    }
  }
  if (isInstall) {
    return {
      outcome: 'rollback-failed',
      reason: `install left the release ${err.releaseStatus}; uninstall it by hand`,
      attempts,
      error,
    }
  }
  try {
    // to the revision that ran before this upgrade: helm's default is the failed upgrade itself
    await helm.rollback(name, namespace, timeoutMs, release.installedRevision)
    return {
      outcome: 'rolled-back',
      reason: `Helm left the release ${err.releaseStatus}; rolled back to ${release.installed} with its own timeout`,
      attempts,
      error,
    }
  } catch (rollbackErr) {
    return {
      outcome: 'rollback-failed',
      reason: `release is ${err.releaseStatus} and the rollback failed: ${chainMessage(rollbackErr)}`,
      attempts,
      error,
    }
  }
}
