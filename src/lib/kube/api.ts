/**
 * The few Kubernetes API calls a control plane's services and the operator's commands make:
 * Secrets (bootstrap tokens), ConfigMaps (the join-config), Nodes, and the Lease that serializes
 * control-plane joins. Every request is bounded; an error names the request and its HTTP status,
 * never the response body, which can echo a Secret back.
 */
import { CoordinationV1Api, CoreV1Api, type V1Lease } from '@kubernetes/client-node'
import { CliError, ExitCode, messageOf } from '../errors/index.js'
import { API_REQUEST_TIMEOUT_MS, readKubeconfig, requestTimeout, statusOf, timedOut } from './client.js'

export interface KubeObjectMeta {
  name: string
  namespace: string
}

export interface SecretObject {
  apiVersion: 'v1'
  kind: 'Secret'
  metadata: KubeObjectMeta
  type: string
  /** Plain values; the API server stores them base64 under `data`. */
  stringData: Record<string, string>
}

export interface ConfigMapData {
  data: Record<string, string>
  resourceVersion: string
}

export interface Lease {
  holder?: string
  /** When the holder took or last renewed it. */
  renewed?: Date
  durationSeconds?: number
  resourceVersion: string
}

export interface LeaseSpec {
  holder: string
  renewed: Date
  durationSeconds: number
}

/** A request answered with an HTTP error: the status says what to do. */
export class KubeApiError extends CliError {
  constructor(
    readonly what: string,
    readonly status: number,
  ) {
    super(`${what}: HTTP ${status}`, {
      hint:
        status === 401 || status === 403
          ? 'check that the kubeconfig holds credentials that may do this (the cluster admin)'
          : undefined,
    })
    this.name = 'KubeApiError'
  }
}

export interface KubeApi {
  /** Rejects with KubeApiError status 409 when a Secret of that name exists. */
  createSecret(secret: SecretObject): Promise<void>
  getConfigMap(namespace: string, name: string): Promise<ConfigMapData | undefined>
  /** Creates the ConfigMap, or replaces the data of the one there. */
  applyConfigMap(namespace: string, name: string, data: Record<string, string>): Promise<void>
  /** Whether a Node of that name is registered. */
  hasNode(name: string): Promise<boolean>
  getLease(namespace: string, name: string): Promise<Lease | undefined>
  /** Rejects with status 409 when it exists already. */
  createLease(namespace: string, name: string, spec: LeaseSpec): Promise<void>
  /** Rejects with status 409 when the Lease changed since `resourceVersion` was read. */
  replaceLease(namespace: string, name: string, spec: LeaseSpec, resourceVersion: string): Promise<void>
}

export interface KubeApiOptions {
  requestTimeoutMs?: number
}

export function openKubeApi(kubeconfigPath: string, opts: KubeApiOptions = {}): KubeApi {
  const kc = readKubeconfig(kubeconfigPath)
  const core = kc.makeApiClient(CoreV1Api)
  const coordination = kc.makeApiClient(CoordinationV1Api)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const server = kc.getCurrentCluster()?.server ?? kubeconfigPath
  const options = () => requestTimeout(timeoutMs)
  const call = async <T>(
    what: string,
    run: () => Promise<T>,
    absentOn404 = false,
  ): Promise<T | undefined> => {
    try {
      return await run()
    } catch (err) {
      const status = statusOf(err)
      if (status === 404 && absentOn404) return undefined
      if (status !== undefined) throw new KubeApiError(`${what} at ${server}`, status)
      const why = timedOut(err) ? `no answer within ${timeoutMs} ms` : messageOf(err).split('\n')[0]
      throw new CliError(`${what} at ${server}: ${why}`, {
        exitCode: ExitCode.Unreachable,
        hint: 'check that the kubeconfig points at the cluster and that it is reachable from here',
      })
    }
  }
  const leaseBody = (
    namespace: string,
    name: string,
    spec: LeaseSpec,
    resourceVersion?: string,
  ): V1Lease => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, resourceVersion },
    spec: {
      holderIdentity: spec.holder,
      leaseDurationSeconds: spec.durationSeconds,
      renewTime: spec.renewed,
    },
  })
  return {
    async createSecret(secret) {
      await call(`creating Secret ${secret.metadata.namespace}/${secret.metadata.name}`, () =>
        core.createNamespacedSecret({ namespace: secret.metadata.namespace, body: secret }, options()),
      )
    },
    async getConfigMap(namespace, name) {
      const cm = await call(
        `reading ConfigMap ${namespace}/${name}`,
        () => core.readNamespacedConfigMap({ namespace, name }, options()),
        true,
      )
      return cm && { data: cm.data ?? {}, resourceVersion: cm.metadata?.resourceVersion ?? '' }
    },
    async applyConfigMap(namespace, name, data) {
      const what = `writing ConfigMap ${namespace}/${name}`
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data }
      const existing = await this.getConfigMap(namespace, name)
      if (existing === undefined)
        await call(what, () => core.createNamespacedConfigMap({ namespace, body }, options()))
      else
        await call(what, () =>
          core.replaceNamespacedConfigMap(
            {
              namespace,
              name,
              body: { ...body, metadata: { ...body.metadata, resourceVersion: existing.resourceVersion } },
            },
            options(),
          ),
        )
    },
    async hasNode(name) {
      const node = await call(`reading Node ${name}`, () => core.readNode({ name }, options()), true)
      return node !== undefined
    },
    async getLease(namespace, name) {
      const lease = await call(
        `reading Lease ${namespace}/${name}`,
        () => coordination.readNamespacedLease({ namespace, name }, options()),
        true,
      )
      if (!lease) return undefined
      const renewed = lease.spec?.renewTime ?? lease.spec?.acquireTime
      return {
        holder: lease.spec?.holderIdentity,
        renewed: renewed === undefined ? undefined : new Date(renewed),
        durationSeconds: lease.spec?.leaseDurationSeconds,
        resourceVersion: lease.metadata?.resourceVersion ?? '',
      }
    },
    async createLease(namespace, name, spec) {
      await call(`creating Lease ${namespace}/${name}`, () =>
        coordination.createNamespacedLease({ namespace, body: leaseBody(namespace, name, spec) }, options()),
      )
    },
    async replaceLease(namespace, name, spec, resourceVersion) {
      await call(`replacing Lease ${namespace}/${name}`, () =>
        coordination.replaceNamespacedLease(
          { namespace, name, body: leaseBody(namespace, name, spec, resourceVersion) },
          options(),
        ),
      )
    },
  }
}
