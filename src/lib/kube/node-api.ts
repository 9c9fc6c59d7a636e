/**
 * KubeApi for a control plane's services over node:https, without @kubernetes/client-node: loading
 * that library alone takes a process from 39 MB to 121 MB resident, and the join service has 80 MB
 * in all (DESIGN §6). Same contract as openKubeApi (test/kube/api.test.ts runs both): every request
 * bounded, errors with the request and its HTTP status and never the body.
 */
import { request, type RequestOptions } from 'node:https'
import { CliError, ExitCode, messageOf } from '../errors/index.js'
import { formatDuration } from '../system/index.js'
import type { KubeApi, KubeApiOptions, Lease, LeaseSpec, NamedConfigMap } from './api.js'
import { API_REQUEST_TIMEOUT_MS, KubeApiError } from './client.js'
import { readNodeKubeconfig, type NodeKubeconfig } from './node-kubeconfig.js'

/** No object the services read is near this; a larger answer is not the API server's. */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024

export async function openNodeKubeApi(kubeconfigPath: string, opts: KubeApiOptions = {}): Promise<KubeApi> {
  const kc = await readNodeKubeconfig(kubeconfigPath)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const send = (what: string, method: string, path: string, body?: unknown) =>
    call(kc, { what, method, path, body, timeoutMs })
  const orAbsent = async <T>(p: Promise<T>): Promise<T | undefined> =>
    p.catch((err: unknown) => {
      if (err instanceof KubeApiError && err.status === 404) return undefined
      throw err
    })
  const lease = (namespace: string, name: string, spec: LeaseSpec, resourceVersion?: string) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      holderIdentity: spec.holder,
      leaseDurationSeconds: spec.durationSeconds,
      renewTime: spec.renewed.toISOString().replace(/Z$/, '000Z'), // MicroTime
    },
  })
  const leases = (namespace: string) => `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`
  const configMaps = (namespace: string) => `/api/v1/namespaces/${namespace}/configmaps`
  const api: KubeApi = {
    async createSecret(secret) {
      const { namespace, name } = secret.metadata
      await send(
        `creating Secret ${namespace}/${name}`,
        'POST',
        `/api/v1/namespaces/${namespace}/secrets`,
        secret,
      )
    },
    async getSecret(namespace, name) {
      const secret = (await orAbsent(
        send(`reading Secret ${namespace}/${name}`, 'GET', `/api/v1/namespaces/${namespace}/secrets/${name}`),
      )) as { data?: Record<string, string> } | undefined
      if (!secret) return undefined
      const data = Object.entries(secret.data ?? {})
      return Object.fromEntries(data.map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
    },
    async getConfigMap(namespace, name) {
      const cm = (await orAbsent(
        send(`reading ConfigMap ${namespace}/${name}`, 'GET', `${configMaps(namespace)}/${name}`),
      )) as { data?: Record<string, string>; metadata?: { resourceVersion?: string } } | undefined
      return cm && { data: cm.data ?? {}, resourceVersion: cm.metadata?.resourceVersion ?? '' }
    },
    async applyConfigMap(namespace, name, data) {
      const what = `writing ConfigMap ${namespace}/${name}`
      const existing = await api.getConfigMap(namespace, name)
      const metadata = { name, namespace, ...(existing ? { resourceVersion: existing.resourceVersion } : {}) }
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata, data }
      if (existing) await send(what, 'PUT', `${configMaps(namespace)}/${name}`, body)
      else await send(what, 'POST', configMaps(namespace), body)
    },
    async createConfigMap(namespace, name, data, labels = {}) {
      const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data }
      await send(`creating ConfigMap ${namespace}/${name}`, 'POST', configMaps(namespace), body)
    },
    async listConfigMaps(namespace, labelSelector) {
      const query = `?labelSelector=${encodeURIComponent(labelSelector)}`
      const list = (await send(
        `listing ConfigMaps ${namespace} (${labelSelector})`,
        'GET',
        configMaps(namespace) + query,
      )) as { items?: ConfigMapItem[] }
      return (list.items ?? []).map(namedConfigMap)
    },
    async deleteConfigMap(namespace, name) {
      await orAbsent(
        send(`deleting ConfigMap ${namespace}/${name}`, 'DELETE', `${configMaps(namespace)}/${name}`),
      )
    },
    async hasNode(name) {
      return (await orAbsent(send(`reading Node ${name}`, 'GET', `/api/v1/nodes/${name}`))) !== undefined
    },
    async getLease(namespace, name) {
      const l = (await orAbsent(
        send(`reading Lease ${namespace}/${name}`, 'GET', `${leases(namespace)}/${name}`),
      )) as
        | {
            spec?: {
              holderIdentity?: string
              renewTime?: string
              acquireTime?: string
              leaseDurationSeconds?: number
            }
            metadata?: { resourceVersion?: string }
          }
        | undefined
      if (!l) return undefined
      const renewed = l.spec?.renewTime ?? l.spec?.acquireTime
      const result: Lease = {
        holder: l.spec?.holderIdentity,
        renewed: renewed === undefined ? undefined : new Date(renewed),
        durationSeconds: l.spec?.leaseDurationSeconds,
        resourceVersion: l.metadata?.resourceVersion ?? '',
      }
      return result
    },
    async createLease(namespace, name, spec) {
      await send(
        `creating Lease ${namespace}/${name}`,
        'POST',
        leases(namespace),
        lease(namespace, name, spec),
      )
    },
    async replaceLease(namespace, name, spec, resourceVersion) {
      await send(
        `replacing Lease ${namespace}/${name}`,
        'PUT',
        `${leases(namespace)}/${name}`,
        lease(namespace, name, spec, resourceVersion),
      )
    },
  }
  return api
}

interface ConfigMapItem {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> }
  data?: Record<string, string>
}

const namedConfigMap = (cm: ConfigMapItem): NamedConfigMap => ({
  name: cm.metadata?.name ?? '',
  labels: cm.metadata?.labels ?? {},
  data: cm.data ?? {},
  resourceVersion: cm.metadata?.resourceVersion ?? '',
})

interface Call {
  what: string
  method: string
  path: string
  body?: unknown
  timeoutMs: number
  /** The body's media type (default application/json). */
  contentType?: string
}

/**
 * A node's own Node object's annotations: what a node agent reads its instructions from and reports
 * in. A kubelet's credentials may read and patch its own Node (the Node authorizer and
 * NodeRestriction admit that much), so a worker needs no other credential for it.
 */
export interface NodeAnnotationsApi {
  /** Undefined when the Node is not registered. */
  get(node: string): Promise<Record<string, string> | undefined>
  /** A merge patch: `null` removes an annotation. */
  merge(node: string, annotations: Record<string, string | null>): Promise<void>
}

export async function openNodeAnnotations(
  kubeconfigPath: string,
  opts: KubeApiOptions = {},
): Promise<NodeAnnotationsApi> {
  const kc = await readNodeKubeconfig(kubeconfigPath)
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS
  const at = (node: string) => `/api/v1/nodes/${encodeURIComponent(node)}`
  return {
    async get(node) {
      const found = (await call(kc, {
        what: `reading Node ${node}`,
        method: 'GET',
        path: at(node),
        timeoutMs,
      }).catch((err: unknown) => {
        if (err instanceof KubeApiError && err.status === 404) return undefined
        throw err
      })) as { metadata?: { annotations?: Record<string, string> } } | undefined
      return found && { ...found.metadata?.annotations }
    },
    async merge(node, annotations) {
      await call(kc, {
        what: `annotating Node ${node}`,
        method: 'PATCH',
        path: at(node),
        body: { metadata: { annotations } },
        contentType: 'application/merge-patch+json',
        timeoutMs,
      })
    },
  }
}

function call(kc: NodeKubeconfig, c: Call): Promise<unknown> {
  const url = new URL(c.path, kc.server)
  const payload = c.body === undefined ? undefined : Buffer.from(JSON.stringify(c.body))
  const options: RequestOptions = {
    method: c.method,
    ca: kc.ca,
    cert: kc.cert,
    key: kc.key,
    rejectUnauthorized: !kc.insecureSkipTlsVerify,
    signal: AbortSignal.timeout(c.timeoutMs),
    headers: {
      accept: 'application/json',
      ...(payload
        ? { 'content-type': c.contentType ?? 'application/json', 'content-length': payload.length }
        : {}),
      ...(kc.token ? { authorization: `Bearer ${kc.token}` } : {}),
    },
  }
  const where = `${c.what} at ${kc.server}`
  return new Promise((resolve, reject) => {
    const req = request(url, options, (res) => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_RESPONSE_BYTES)
          req.destroy(new Error(`answer larger than ${MAX_RESPONSE_BYTES} bytes`))
        else chunks.push(chunk)
      })
      res.on('end', () => {
        const status = res.statusCode ?? 0
        if (status < 200 || status > 299) return reject(new KubeApiError(where, status))
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
        } catch {
          reject(new CliError(`${where}: the answer is not JSON`))
        }
      })
      res.on('error', (err) => reject(unreachable(where, err, c.timeoutMs)))
    })
    req.on('error', (err) => reject(unreachable(where, err, c.timeoutMs)))
    req.end(payload)
  })
}

function unreachable(where: string, err: Error, timeoutMs: number): CliError {
  const timedOut = err.name === 'AbortError' || err.name === 'TimeoutError'
  return new CliError(
    `${where}: ${timedOut ? `no answer within ${formatDuration(timeoutMs)}` : messageOf(err).split('\n')[0]}`,
    {
      exitCode: ExitCode.Unreachable,
      hint: 'check that the kubeconfig points at the cluster and that it is reachable from here',
    },
  )
}
