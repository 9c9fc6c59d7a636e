/**
 * The first question init's bring-up and an upgrade put to a cluster: which releases it has (`helm
 * list`). Both tell an unreachable cluster the same way, exit 3 with the kubeconfig to check, and as
 * fast: upgrade asks a cluster that has been running once; init asks an API server kubeadm has only
 * just started, so it gives it a few short retries, each said.
 */
import { readFile } from 'node:fs/promises'
import { CliError, ExitCode } from '../../errors/index.js'
import { CommandFailedError, describeRetry, retry } from '../../system/index.js'
import { parseYaml } from '../../yaml/index.js'
import { helmRefusedKubeconfig, helmSaidUnreachable } from '../binary/index.js'
import type { Helm, InstalledRelease } from '../binary/index.js'

/** init's patience with an API server kubeadm has just started: 5 attempts, 1 + 2 + 4 + 8 s apart. */
export const API_COMING_UP = { attempts: 5, initialDelayMs: 1_000 } as const

export interface ListReleasesOptions {
  /** 1 (the default) for a cluster that should be up; API_COMING_UP's for one that is starting. */
  attempts?: number
  initialDelayMs?: number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  /** Told each retry: which attempt of how many failed, why, and the wait until the next. */
  report?: (line: string) => void
}

/** helm itself blamed the cluster, or got no answer within its bound. */
const blamesCluster = (err: unknown): boolean =>
  helmSaidUnreachable(err) || (err instanceof CommandFailedError && err.timedOut)

export async function listInstalledReleases(
  helm: Helm,
  kubeconfig: string,
  opts: ListReleasesOptions = {},
): Promise<InstalledRelease[]> {
  const attempts = opts.attempts ?? 1
  let made = 0
  try {
    return await retry(
      () => {
        made++
        return helm.listReleases()
      },
      {
        attempts,
        initialDelayMs: opts.initialDelayMs ?? API_COMING_UP.initialDelayMs,
        retryable: blamesCluster,
        sleep: opts.sleep,
        onRetry: (err, attempt, delayMs) => opts.report?.(describeRetry(err, attempt, attempts, delayMs)),
      },
    )
  } catch (err) {
    const unreachable = blamesCluster(err)
    throw new CliError(`reading the installed Helm releases${made > 1 ? ` (${made} attempts)` : ''}`, {
      exitCode: unreachable ? ExitCode.Unreachable : ExitCode.Failure,
      hint: unreachable
        ? `check that the cluster in ${kubeconfig} is reachable from here`
        : helmRefusedKubeconfig(err)
          ? `${kubeconfig} is not a kubeconfig helm can load; fix it, or pass another with --kubeconfig`
          : "see helm's message above; check the helm installation",
      cause: err,
    })
  }
}

/** The API server the kubeconfig's current context names, for a wait's title; undefined when unclear. */
export async function kubeconfigServer(kubeconfig: string): Promise<string | undefined> {
  try {
    const doc = parseYaml(await readFile(kubeconfig, 'utf8'), kubeconfig).value as {
      'current-context'?: unknown
      contexts?: Array<{ name?: unknown; context?: { cluster?: unknown } }>
      clusters?: Array<{ name?: unknown; cluster?: { server?: unknown } }>
    }
    const context = doc.contexts?.find((c) => c.name === doc['current-context'])?.context
    const server = doc.clusters?.find((c) => c.name === context?.cluster)?.cluster?.server
    return typeof server === 'string' ? server : undefined
  } catch {
    return undefined // only a title loses detail: helm reads the file itself and says what is wrong
  }
}
