/**
 * Runs `kubeadm join` as Constellation does: the config in a 0600 temp file, a fresh manifests
 * directory, up to three attempts within five minutes, every attempt's output in the node's log
 * (credentials redacted) and every failure logged with kubeadm's own words.
 */
import { mkdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { chainMessage } from '../../errors/index.js'
import { CommandFailedError, retry } from '../../system/index.js'
import { kubernetesMinor } from '../../versions/index.js'
import type { KubeadmDeps } from './kubeadm-init.js'
import { withKubeadmConfig, writeAuditPolicy } from './kubeadm-files.js'
import { renderKubeadmJoinConfig, type KubeadmJoinInput } from './kubeadm-join-config.js'
import { redactCredentials } from '../logs.js'

/** Constellation's JoinClient: three attempts, no more than five minutes for all of them. */
export const KUBEADM_JOIN_ATTEMPTS = 3
export const KUBEADM_JOIN_TIMEOUT_MS = 5 * 60_000
const KUBEADM_JOIN_RETRY_DELAY_MS = 1_000
const KUBEADM_VERSION = /^v\d+\.\d+\.\d+(?:[-+].*)?$/

export interface KubeadmJoinDeps extends Omit<KubeadmDeps, 'now'> {
  attempts?: number
  timeoutMs?: number
  retryDelayMs?: number
  /** Ends a running attempt (the daemon stops). */
  signal?: AbortSignal
}

export async function runKubeadmJoin(input: KubeadmJoinInput, deps: KubeadmJoinDeps): Promise<void> {
  const { paths, log } = deps
  const timeoutMs = deps.timeoutMs ?? KUBEADM_JOIN_TIMEOUT_MS
  const deadline = Date.now() + timeoutMs
  const version = await installedVersion(deps)
  const mismatch = versionMismatch(version, input.clusterVersion)
  if (mismatch) deps.log.warn(mismatch, { installedKubeadm: version, clusterVersion: input.clusterVersion })
  if (input.controlPlane) await writeAuditPolicy(paths)
  const render = () =>
    renderKubeadmJoinConfig({
      ...input,
      kubernetesVersion: version,
      paths: { caCertPath: path.join(paths.kubernetesPki, 'ca.crt'), patchesDir: paths.kubeadmPatchDir },
    })
  await withKubeadmConfig(paths, 'join', render, async (config) => {
    const attempts = deps.attempts ?? KUBEADM_JOIN_ATTEMPTS
    await retry(
      async (attempt) => {
        // kubeadm's preflight refuses a non-empty manifests directory, also one a failed attempt left
        await rm(paths.manifestsDir, { recursive: true, force: true })
        await mkdir(paths.manifestsDir, { recursive: true })
        log.info('Running kubeadm join', { attempt, of: attempts, controlPlane: input.controlPlane })
        await runJoin(config, deadline, deps)
      },
      {
        attempts,
        initialDelayMs: deps.retryDelayMs ?? KUBEADM_JOIN_RETRY_DELAY_MS,
        retryable: () => Date.now() < deadline,
        signal: deps.signal,
        onRetry: (err, attempt) =>
          log.warn('kubeadm join failed; trying again', { attempt, of: attempts, error: chainMessage(err) }),
      },
    ).catch((cause: unknown) => {
      log.error('kubeadm join failed; giving up', { error: chainMessage(cause) })
      const within = `${Math.round(timeoutMs / 1000)} s`
      throw new Error(`kubeadm join failed (at most ${attempts} attempts within ${within})`, { cause })
    })
  })
}

/**
 * A kubeadm of another minor than the cluster's joins this node at a version the cluster is not at.
 * Said, not refused: this runs past the node lock, where a refusal would cost the node, and kubeadm's
 * own skew checks still stand; the cause is the cluster's record of its components.
 */
function versionMismatch(installed: string, cluster: string | undefined): string | undefined {
  if (!cluster || kubernetesMinor(installed) === kubernetesMinor(cluster)) return undefined
  return `The join ticket says the cluster runs Kubernetes ${cluster}, but the components it carries installed kubeadm ${installed}: the cluster's record of its components (kube-system/constellation-components-${cluster}, or the join service's components file) is not of its version`
}

/** The kubeadm API version follows the installed kubeadm, not the cluster: ask it. */
async function installedVersion(deps: KubeadmJoinDeps): Promise<string> {
  let stdout: string
  try {
    ;({ stdout } = await deps.runner.run(deps.kubeadm, ['version', '-o', 'short'], { signal: deps.signal }))
  } catch (cause) {
    throw new Error('asking kubeadm for its version', { cause })
  }
  const version = stdout.trim()
  if (!KUBEADM_VERSION.test(version))
    throw new Error(`kubeadm version -o short printed ${JSON.stringify(version.slice(0, 80))}, not vX.Y.Z`)
  return version
}

async function runJoin(config: string, deadline: number, deps: KubeadmJoinDeps): Promise<void> {
  const started = performance.now()
  try {
    const { stdout, stderr } = await deps.runner.run(deps.kubeadm, ['join', '-v=5', '--config', config], {
      timeoutMs: Math.max(deadline - Date.now(), 1),
      signal: deps.signal,
    })
    deps.recordOutput(redactCredentials(stdout + stderr))
    deps.log.info('kubeadm join succeeded', { durationMs: Math.round(performance.now() - started) })
  } catch (err) {
    if (!(err instanceof CommandFailedError)) throw err
    deps.recordOutput(redactCredentials(err.stdout + err.stderr))
    // The message carries kubeadm's stderr into the log: redacted, and without the unredacted cause.
    // eslint-disable-next-line preserve-caught-error
    throw new Error(redactCredentials(err.message))
  }
}
