/**
 * The @kubernetes/client-node side of the kube domain: reading an operator's kubeconfig, bounding
 * each request, and KubeApi over the library. The library is imported on first use only (it costs
 * about 80 MB resident, which a node's services avoid), and only the library: our own modules stay
 * in the static graph, so their classes are the same wherever they are used.
 */
import type * as ClientNode from '@kubernetes/client-node'
import type {
  ConfigurationOptions,
  KubeConfig,
  RequestContext,
  ResponseContext,
  V1Lease,
} from '@kubernetes/client-node'
import { CliError } from '../errors/index.js'
import type { KubeApi, KubeApiOptions, LeaseSpec } from './api.js'
import { API_REQUEST_TIMEOUT_MS, requestCaller } from './client.js'

export type Library = typeof ClientNode
let library: Promise<Library> | undefined

/** The library, imported once, on first use. */
export const clientNodeLibrary = (): Promise<Library> => (library ??= import('@kubernetes/client-node'))

/**
 * Starts loading the library (~0.6 s of CPU, hundreds of modules) for a command that will need it
 * only after a long wait of its own (`mini up` reads the cluster's status once every node joined):
 * the load then runs while the command waits. A failure shows at the first use.
 */
export function preloadClientNodeLibrary(): void {
  clientNodeLibrary().catch(() => {})
}

/**
 * The library's own parse error quotes the lines around the problem, which can hold a token or a
 * key: only the file and the error's kind are kept.
 */
export function readKubeconfig(k8s: Library, kubeconfigPath: string): KubeConfig {
  const kc = new k8s.KubeConfig()
  try {
    kc.loadFromFile(kubeconfigPath)
  } catch (err) {
    const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined
    const kind = code ?? (err instanceof Error ? err.name : 'unreadable')
    throw new CliError(
      `reading kubeconfig ${kubeconfigPath}: ${kind === 'YAMLException' ? 'not valid YAML' : kind}`,
      {
        hint: 'pass --kubeconfig PATH, or run in the workspace that holds constellation-admin.conf',
      },
    )
  }
  return kc
}

/** Aborts each request that takes longer than `ms`. */
export function requestTimeout(k8s: Library, ms: number): ConfigurationOptions {
  const { Observable } = k8s
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(ms))
          return new Observable(Promise.resolve(ctx))
        },
        post: (ctx: ResponseContext) => new Observable(Promise.resolve(ctx)),
      },
    ],
    middlewareMergeStrategy: 'append',
  }
}

/** A Secret's `data` is base64 on the wire; its values come back as text. */
const decodeData = (data: Record<string, string> | undefined): Record<string, string> =>
  Object.fromEntries(
    Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  )

export async function openClientNodeKubeApi(
  kubeconfigPath: string,
  opts: KubeApiOptions = {},
): Promise<KubeApi> {
  const k8s = await clientNodeLibrary()
  const kc = readKubeconfig(k8s, kubeconfigPath)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const server = kc.getCurrentCluster()?.server ?? kubeconfigPath
  const options = () => requestTimeout(k8s, timeoutMs)
  const call = requestCaller(server, timeoutMs, kubeconfigPath)
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
  const api: KubeApi = {
    async createSecret(secret) {
      await call(`creating Secret ${secret.metadata.namespace}/${secret.metadata.name}`, () =>
        core.createNamespacedSecret({ namespace: secret.metadata.namespace, body: secret }, options()),
      )
    },
    async getSecret(namespace, name) {
      const secret = await call(
        `reading Secret ${namespace}/${name}`,
        () => core.readNamespacedSecret({ namespace, name }, options()),
        true,
      )
      return secret && decodeData(secret.data)
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
      const existing = await api.getConfigMap(namespace, name)
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
    async createConfigMap(namespace, name, data, labels = {}) {
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data }
      await call(`creating ConfigMap ${namespace}/${name}`, () =>
        core.createNamespacedConfigMap({ namespace, body }, options()),
      )
    },
    async listConfigMaps(namespace, labelSelector) {
      const list = await call(`listing ConfigMaps ${namespace} (${labelSelector})`, () =>
        core.listNamespacedConfigMap({ namespace, labelSelector }, options()),
      )
      return (list?.items ?? []).map((cm) => ({
        name: cm.metadata?.name ?? '',
        labels: cm.metadata?.labels ?? {},
        data: cm.data ?? {},
        resourceVersion: cm.metadata?.resourceVersion ?? '',
      }))
    },
    async deleteConfigMap(namespace, name) {
      await call(
        `deleting ConfigMap ${namespace}/${name}`,
        () => core.deleteNamespacedConfigMap({ namespace, name }, options()),
        true,
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
  return api
}
