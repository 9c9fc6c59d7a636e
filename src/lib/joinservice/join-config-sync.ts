/**
 * Keeps this control plane's join-config file in step with the cluster's `join-config` ConfigMap,
 * which the operator updates (`constellation join-config update`, with the admin credentials). The
 * file is what MeasurementsStore follows, so a change reaches every join service without a restart.
 * A malformed ConfigMap is never copied: the file, and so the service, keeps the last good set.
 * The first control plane seeds the ConfigMap from the file init wrote.
 */
import { parseJoinConfig } from '../attestation/index.js'
import { messageOf } from '../errors/index.js'
import { exists, readRegularFile, writeSecretFile, type Logger } from '../system/index.js'
import { JOIN_CONFIG_MAX_BYTES } from './measurements-store.js'

/** How often the ConfigMap is read: an operator's update is enforced within this. */
export const JOIN_CONFIG_SYNC_INTERVAL_MS = 2_000

/** The cluster's join-config ConfigMap, as the wiring reaches it through the Kubernetes API. */
export interface JoinConfigMap {
  /** Its join-config text; undefined when the ConfigMap does not exist. */
  read(): Promise<string | undefined>
  /** Creates it; one that another control plane created meanwhile is not an error. */
  create(text: string): Promise<void>
}

export interface JoinConfigSyncOptions {
  configMap: JoinConfigMap
  /** The file MeasurementsStore follows (nodePaths(root).joinConfigFile). */
  file: string
  logger: Logger
  intervalMs?: number
}

export class JoinConfigSync {
  private timer?: NodeJS.Timeout
  private running?: Promise<void>
  /** The last problem logged, so an unchanged one is not logged on every round. */
  private lastProblem = ''

  constructor(private readonly opts: JoinConfigSyncOptions) {}

  /** One round now, then one per interval until stop(). */
  async start(): Promise<void> {
    await this.syncOnce()
    this.timer = setInterval(() => void this.syncOnce(), this.opts.intervalMs ?? JOIN_CONFIG_SYNC_INTERVAL_MS)
    this.timer.unref()
  }

  stop(): Promise<void> {
    clearInterval(this.timer)
    return this.running ?? Promise.resolve()
  }

  /** Never rejects: an unreachable API or a bad ConfigMap leaves the file as it is, logged once. */
  syncOnce(): Promise<void> {
    this.running ??= this.round()
      .catch((err: unknown) =>
        this.problem('Cannot read the cluster join-config; enforcing the local copy', err),
      )
      .finally(() => (this.running = undefined))
    return this.running
  }

  private async round(): Promise<void> {
    const { configMap, file, logger } = this.opts
    const [cluster, local] = await Promise.all([configMap.read(), readIfPresent(file)])
    if (cluster === undefined) {
      if (local === undefined) return this.problem('No join-config yet, in the cluster or on this node', null)
      await configMap.create(local)
      logger.info('Published this node’s join-config as the cluster’s', { file })
    } else if (cluster !== local) {
      try {
        parseJoinConfig(cluster)
      } catch (err) {
        return this.problem('The cluster join-config is malformed; keeping the last good measurements', err)
      }
      await writeSecretFile(file, cluster, 'replace')
      logger.info('The cluster join-config changed; measurements updated', { file })
    }
    this.lastProblem = ''
  }

  private problem(message: string, err: unknown): void {
    const key = `${message}: ${err === null ? '' : messageOf(err)}`
    if (key !== this.lastProblem)
      this.opts.logger.warn(message, err === null ? {} : { error: messageOf(err) })
    this.lastProblem = key
  }
}

async function readIfPresent(file: string): Promise<string | undefined> {
  if (!(await exists(file))) return undefined
  const bytes = await readRegularFile(file, { maxBytes: JOIN_CONFIG_MAX_BYTES, what: 'join-config' })
  return bytes.toString('utf8')
}
