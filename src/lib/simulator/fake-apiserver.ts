/**
 * FakeApiServer — a CONTRACT FAKE (a test double) of the Kubernetes API: no kube-apiserver can run
 * on these machines. Tests use it in place of the real API server, and `constellation mini` uses it
 * as its Kubernetes SIMULATOR (and says so on every output): it is not a Kubernetes API server.
 * Over HTTPS with its own CA it serves core (/api/v1) and group (/apis/<group>/<version>)
 * resources, namespaced or cluster-scoped: list with limit/continue paging, label selectors
 * (`=`, `!=`, `in`, `notin`, `key`, `!key`) and field selectors (metadata.name/namespace and the
 * field labels the real server knows); get, create (409 on exists), replace (409 on a stale
 * resourceVersion), merge, strategic merge (lists of named objects by name, directives obeyed),
 * JSON and server-side-apply patches (apply creates), the status subresource, a pod's eviction subresource
 * (PodDisruptionBudgets honoured: fake-apiserver-eviction.ts), delete (owned objects follow, as the garbage collector does);
 * Status objects on errors. Objects are kept as the real server keeps them: uid, creationTimestamp,
 * generation (bumped when spec changes), a Service's clusterIP, workload defaults.
 *
 * Watches (`watch=true`) are real streams (fake-apiserver-watch.ts): the current state as ADDED
 * events, or every change after a resourceVersion still held in a bounded history (older: 410
 * Expired), then each change as it happens, honouring namespace, selectors, timeoutSeconds,
 * bookmarks and the watch-list protocol (sendInitialEvents).
 *
 * Workloads become ready (fake-apiserver-controllers.ts): a few ms after a write a "controller"
 * sets the status of Deployments (with an owned ReplicaSet per pod template), ReplicaSets,
 * DaemonSets, StatefulSets and Jobs, and binds PVCs, each as a MODIFIED event: what helm 3/4
 * `--wait`, `kubectl rollout status` and `kubectl wait` look at. No pods run.
 *
 * For the real helm 3/4 and kubectl (test/upgrade/helm-api.test.ts and
 * test/simulator/fake-apiserver-{workloads,kubectl}.test.ts hold it to them) it also serves
 * discovery (/api, /apis, resource lists with the real short names; a stored CRD registers its
 * resources and is Established at once), OpenAPI v3 documents that leave validation to the server,
 * Table responses with kube-apiserver's printer columns for kubectl's human-readable `get`
 * (fake-apiserver-tables.ts), /version, /livez and /readyz, and `kubectl auth whoami`
 * (fake-apiserver-info.ts); and it decodes the protobuf bodies of client-go's typed clients for
 * Secrets, ConfigMaps, Namespaces and SelfSubjectReviews. Like the real server it authenticates
 * every request but the public version and health ones (the bearer token of its kubeconfig, else
 * 401), starts with the namespaces default, kube-system, kube-public and kube-node-lease, and stores
 * a Secret's write-only stringData as base64 data. It records every request.
 *
 * Expired bootstrap tokens are deleted, as kube-controller-manager's tokencleaner does in a kubeadm
 * cluster (`cleanExpiredTokens`, every `tokenCleanIntervalMs` while it runs). A Node whose kubelet
 * stopped renewing its Lease and posting its status is marked Unknown after the grace period, as its
 * node lifecycle controller does (fake-apiserver-node-lifecycle.ts, `nodeMonitorGracePeriodMs`).
 *
 * Faults on request: `failOn` (a request fails with a status), `keepUnready` / `makeReady` (a
 * workload never gets ready until released), `goAway` / `comeBack` (connection refused, or a
 * server that accepts and never answers, then back on the same URL).
 *
 * With `dir` its objects live as JSON files there, laid out as simulator/api-layout.js says: the
 * storage the kubeadm contract fake reads and writes, as kubeadm would through this API (such
 * writes by another process raise no watch events).
 *
 * It listens on 127.0.0.1 at a random port unless told a `host` and `port`; its serving
 * certificate names localhost, 127.0.0.1, that host and any `certHosts`, so a kubeconfig naming
 * one of them verifies against the CA in `kubeconfig()`.
 */
import { randomUUID } from 'node:crypto'
import type http from 'node:http'
import https from 'node:https'
import { isIP, type AddressInfo, type Socket } from 'node:net'
import { formatHostPort } from '../system/index.js'
import { parseYaml } from '../yaml/index.js'
import {
  apiGroupList,
  apiResourceList,
  apiVersions,
  BUILT_IN_TYPES,
  crdTypes,
  groupVersionOf,
  openApiV3Document,
  openApiV3Root,
  type ResourceType,
} from './fake-apiserver-catalog.js'
import { WorkloadControllers, type WorkloadRef } from './fake-apiserver-controllers.js'
import { protobufDeleteOptions, type DeleteOptions } from './fake-apiserver-deleteoptions.js'
import { decideEviction } from './fake-apiserver-eviction.js'
import {
  NODE_MONITOR_GRACE_PERIOD_MS,
  NODE_MONITOR_PERIOD_MS,
  NodeLifecycleController,
} from './fake-apiserver-node-lifecycle.js'
import { healthResponse, selfSubjectReview, versionInfo } from './fake-apiserver-info.js'
import { decodeProtobufObject, UnsupportedProtobufError } from './fake-apiserver-protobuf.js'
import {
  asStored,
  jsonPatch,
  mergePatch,
  strategicMergePatch,
  parsePath,
  readBody,
  send,
  sendText,
  status,
  type ParsedPath,
} from './fake-apiserver-rest.js'
import { fieldMatcher, labelMatcher, SelectorError, type Matcher } from './fake-apiserver-selectors.js'
import { DirStore, keyOf, type ObjectStore } from './fake-apiserver-store.js'
import {
  asTable,
  includeObjectOf,
  printerFor,
  TableRequestError,
  tableVersionWanted,
  type TableListMeta,
} from './fake-apiserver-tables.js'
import { WatchHub } from './fake-apiserver-watch.js'
import { servingCert } from './serving-cert.js'

export type { WorkloadRef } from './fake-apiserver-controllers.js'

export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata: {
    name: string
    namespace?: string
    resourceVersion?: string
    uid?: string
    generation?: number
    labels?: Record<string, string>
    annotations?: Record<string, string>
    [k: string]: unknown
  }
  [k: string]: unknown
}

export interface RecordedRequest {
  method: string
  path: string
  query: URLSearchParams
  body?: unknown
}

export interface FailRule {
  method?: string
  pathIncludes: string
  status: number
  /** How many matching requests fail; default 1. */
  times?: number
  /** Only requests whose body (as JSON) contains this: e.g. the upgrade's write, not the rollback's. */
  bodyIncludes?: string
  /** The Status's reason and message (default InternalError, "injected failure"). */
  reason?: string
  message?: string
}

/** The bearer token of this server's kubeconfig: the cluster admin's credentials. */
export const ADMIN_TOKEN = 'fake-token'

export interface FakeApiServerOptions {
  /** Keep the objects as files here (see above) instead of in memory. */
  dir?: string
  /** How many changes the watch history holds (default 1000); a watch from before them gets 410. */
  watchHistory?: number
  /** The address to listen on (default 127.0.0.1); a specific one goes into the certificate too. */
  host?: string
  /** The port to listen on (default 0: a random free one). */
  port?: number
  /** More IP addresses or DNS names for the serving certificate's subjectAltName. */
  certHosts?: string[]
  /** How often expired bootstrap tokens are deleted (default 30 s; the real tokencleaner acts at expiry). */
  tokenCleanIntervalMs?: number
  /**
   * How long a Node may go without a heartbeat (a status post or a Lease renewal) before it is
   * marked Unknown: kube-controller-manager's --node-monitor-grace-period, default 40 s.
   */
  nodeMonitorGracePeriodMs?: number
  /** How often Nodes are looked at: --node-monitor-period, default 5 s or a quarter of a shorter grace. */
  nodeMonitorPeriodMs?: number
}

const BOOTSTRAP_TOKEN_TYPE = 'bootstrap.kubernetes.io/token'
/** The order of lists: `a.localeCompare(b)` (default locale and options), as a reusable collator. */
const COLLATOR = new Intl.Collator()

/** The namespaces kube-apiserver creates when it starts (and kube-node-lease, for the kubelets' Leases). */
const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease']

/** 0.0.0.0, :: and the like: every address of the machine. */
const isWildcard = (host: string) => isIP(host) !== 0 && /^[0:.]+$/.test(host)

export class FakeApiServer {
  readonly requests: RecordedRequest[] = []
  private readonly objects: ObjectStore
  private readonly failRules: FailRule[] = []
  private readonly hub: WatchHub
  private readonly controllers: WorkloadControllers
  /** The newest resourceVersion handed out (the real server's etcd revision). */
  private rv = 1
  private server?: https.Server
  private readonly sockets = new Set<Socket>()
  private port: number
  private readonly host: string
  private readonly cert: { certPem: string; keyPem: string }
  private mode: 'up' | 'refuse' | 'hang' = 'up'
  private tokenCleaner?: NodeJS.Timeout
  private readonly tokenCleanIntervalMs: number
  private readonly nodeLifecycle: NodeLifecycleController
  url = ''

  constructor(opts: FakeApiServerOptions = {}) {
    this.host = opts.host ?? '127.0.0.1'
    this.port = opts.port ?? 0
    this.tokenCleanIntervalMs = opts.tokenCleanIntervalMs ?? 30_000
    this.cert = servingCert([...(isWildcard(this.host) ? [] : [this.host]), ...(opts.certHosts ?? [])])
    this.objects = opts.dir ? new DirStore(opts.dir) : new Map<string, KubeObject>()
    this.hub = new WatchHub(opts.watchHistory ?? 1000)
    this.controllers = new WorkloadControllers({
      find: (apiVersion, resource, namespace, name) =>
        this.objects.get(keyOf({ apiVersion, resource, namespace, name })),
      listIn: (apiVersion, resource, namespace) => this.select({ apiVersion, resource, namespace }),
      store: (apiVersion, resource, obj) => {
        const p = { apiVersion, resource, namespace: obj.metadata.namespace, name: obj.metadata.name }
        return this.commit(p, obj, this.objects.get(keyOf(p)))
      },
    })
    const nodes = { apiVersion: 'v1', resource: 'nodes' }
    const gracePeriodMs = opts.nodeMonitorGracePeriodMs ?? NODE_MONITOR_GRACE_PERIOD_MS
    this.nodeLifecycle = new NodeLifecycleController(
      {
        nodes: () => this.select(nodes),
        lease: (name) =>
          this.objects.get(
            keyOf({
              apiVersion: 'coordination.k8s.io/v1',
              resource: 'leases',
              namespace: 'kube-node-lease',
              name,
            }),
          ),
        store: (node) => {
          const p = { ...nodes, name: node.metadata.name }
          this.commit(p, node, this.objects.get(keyOf(p)))
        },
      },
      {
        gracePeriodMs,
        monitorPeriodMs: opts.nodeMonitorPeriodMs ?? Math.min(NODE_MONITOR_PERIOD_MS, gracePeriodMs / 4),
      },
    )
    for (const name of SYSTEM_NAMESPACES) this.ensureNamespace(name)
  }

  async start(): Promise<this> {
    const { certPem, keyPem } = this.cert
    this.server = https.createServer({ cert: certPem, key: keyPem }, (req, res) => void this.handle(req, res))
    // every TCP connection, also one still in its TLS handshake, which closeAllConnections misses
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket)
      socket.once('close', () => this.sockets.delete(socket))
    })
    await this.listen()
    this.tokenCleaner = setInterval(() => this.cleanExpiredTokens(), this.tokenCleanIntervalMs).unref()
    this.nodeLifecycle.start()
    // a wildcard address is no address to dial: clients on this machine use loopback
    const dial = isWildcard(this.host) ? '127.0.0.1' : this.host
    this.url = `https://${formatHostPort(dial, this.port)}`
    return this
  }

  /** Ends open watches, pending controller work and every connection, in any goAway mode. */
  async stop(): Promise<void> {
    clearInterval(this.tokenCleaner)
    this.nodeLifecycle.stop()
    this.controllers.stop()
    this.hub.closeAll()
    const server = this.server
    if (!server) return
    this.server = undefined
    server.closeAllConnections()
    // a server already closed by goAway('refuse') calls back at once (with ERR_SERVER_NOT_RUNNING)
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    // a client that reconnected while the server stopped (a join service's watch) would hold
    // close() open for as long as it stays: its socket goes too
    for (const socket of this.sockets) socket.destroy()
    await closed
  }

  /**
   * Makes the server unreachable on its URL until `comeBack()`. 'refuse': the listener and every
   * connection close, so clients get "connection refused". 'hang': connections are accepted but no
   * request is ever answered (a wedged control plane; clients need their own timeout). Open watches
   * end and kept-alive connections close in both modes, so clients must reconnect.
   */
  async goAway(mode: 'refuse' | 'hang'): Promise<void> {
    const server = this.server
    if (!server) throw new Error('FakeApiServer.goAway: the server is not started')
    this.mode = mode
    this.hub.closeAll()
    server.closeAllConnections()
    if (mode === 'refuse' && server.listening)
      await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Undoes `goAway`: listens again on the same port; requests left hanging are dropped (clients retry). */
  async comeBack(): Promise<void> {
    const server = this.server
    if (!server) throw new Error('FakeApiServer.comeBack: the server is not started')
    const was = this.mode
    this.mode = 'up'
    if (was === 'hang') server.closeAllConnections()
    if (!server.listening) await this.listen()
  }

  /**
   * Keeps a workload (Deployment, ReplicaSet, DaemonSet, StatefulSet or Job, by `kind` or plural
   * `resource`, in `namespace` or any) from ever becoming ready: its status shows replicas but none
   * ready or available, a Deployment stays Progressing without Available, a Job stays active. Applies
   * to one that exists already too. Helm's `--wait` then runs into its timeout.
   */
  keepUnready(ref: WorkloadRef): void {
    this.controllers.keepUnready(ref)
  }

  /** Releases a workload held by `keepUnready` (same ref): its controller makes it ready now. */
  makeReady(ref: WorkloadRef): void {
    this.controllers.makeReady(ref)
  }

  /** How many watch streams are open now. */
  get openWatches(): number {
    return this.hub.open
  }

  /** The CA (PEM) a client trusts for this server: its self-signed serving certificate. */
  get caPem(): string {
    return this.cert.certPem
  }

  /** A kubeconfig (YAML) pointing at this server. */
  kubeconfig(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: fake, cluster: {server: "${this.url}", certificate-authority-data: ${Buffer.from(this.cert.certPem).toString('base64')}}}]`,
      `users: [{name: fake, user: {token: ${ADMIN_TOKEN}}}]`,
      'contexts: [{name: fake, context: {cluster: fake, user: fake}}]',
      'current-context: fake',
      '',
    ].join('\n')
  }

  /**
   * Seeds an object at `/api/v1` (core) or `/apis/<group>/<version>`, under `resource` (plural), as
   * if a client had written it: watchers see it and its controller (if any) acts on it. The status
   * of a workload or PVC is its controller's, as on the real server: a seeded one is replaced.
   */
  put(apiVersion: string, resource: string, obj: KubeObject): void {
    const p = { apiVersion, resource, namespace: obj.metadata.namespace, name: obj.metadata.name }
    const existing = this.objects.get(keyOf(p))
    this.commit(p, this.controllers.admit(resource, obj, existing), existing)
  }

  /** kube-system/kubeadm-config's ClusterConfiguration.kubernetesVersion, when kubeadm uploaded one. */
  private recordedKubernetesVersion(): string | undefined {
    const cm = this.get('v1', 'configmaps', 'kubeadm-config', 'kube-system') as
      { data?: Record<string, unknown> } | undefined
    const text = cm?.data?.ClusterConfiguration
    if (typeof text !== 'string') return undefined
    try {
      const cluster = parseYaml(text, 'kubeadm-config').value as { kubernetesVersion?: unknown } | null
      return typeof cluster?.kubernetesVersion === 'string' ? cluster.kubernetesVersion : undefined
    } catch {
      return undefined // a broken record: the version the fake reports without one
    }
  }

  get(apiVersion: string, resource: string, name: string, namespace?: string): KubeObject | undefined {
    return this.objects.get(keyOf({ apiVersion, resource, namespace, name }))
  }

  list(apiVersion: string, resource: string, namespace?: string): KubeObject[] {
    return this.select({ apiVersion, resource, namespace })
  }

  /**
   * Deletes the bootstrap-token Secrets in kube-system whose `expiration` has passed (a token
   * without one never expires), as the tokencleaner controller does; returns their names.
   */
  cleanExpiredTokens(now = new Date()): string[] {
    const p = { apiVersion: 'v1', resource: 'secrets', namespace: 'kube-system' }
    const expired = this.select(p).filter((secret) => {
      if (secret.type !== BOOTSTRAP_TOKEN_TYPE) return false
      const encoded = (secret.data as Record<string, string> | undefined)?.expiration
      const expiration = encoded === undefined ? NaN : Date.parse(Buffer.from(encoded, 'base64').toString())
      return expiration <= now.getTime()
    })
    for (const secret of expired) this.remove({ ...p, name: secret.metadata.name }, secret, false)
    return expired.map((s) => s.metadata.name)
  }

  failOn(rule: FailRule): void {
    this.failRules.push({ times: 1, ...rule })
  }

  /** Built-in resources plus those the stored CRDs register, as the discovery documents list them. */
  resourceTypes(): ResourceType[] {
    const crds = this.select({ apiVersion: 'apiextensions.k8s.io/v1', resource: 'customresourcedefinitions' })
    return [...BUILT_IN_TYPES, ...crds.flatMap((crd) => crdTypes(crd as Parameters<typeof crdTypes>[0]))]
  }

  private hasStatusSubresource(apiVersion: string, resource: string): boolean {
    return this.resourceTypes().some(
      (t) => t.statusSubresource && groupVersionOf(t) === apiVersion && t.resource === resource,
    )
  }

  private listen(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const server = this.server
      if (!server) return reject(new Error('no server'))
      server.once('error', reject)
      server.listen(this.port, this.host, () => {
        server.off('error', reject)
        this.port = (server.address() as AddressInfo).port
        resolve()
      })
    })
  }

  private select(p: ParsedPath, matches: Matcher = () => true): KubeObject[] {
    const prefix = `${p.apiVersion}|${p.resource}|`
    const picked: { obj: KubeObject; key: string }[] = []
    for (const [key, obj] of this.objects.entries()) {
      if (!key.startsWith(prefix)) continue
      if (p.namespace !== undefined && obj.metadata.namespace !== p.namespace) continue
      if (!matches(obj)) continue
      picked.push({ obj, key: keyOf({ ...p, name: obj.metadata.name, namespace: obj.metadata.namespace }) })
    }
    // Each key is built once, not twice per comparison: a paged list of 10,000 objects sorts them
    // for every page. COLLATOR orders exactly as String#localeCompare did.
    return picked.sort((a, b) => COLLATOR.compare(a.key, b.key)).map((x) => x.obj)
  }

  private kindOf(p: ParsedPath): string | undefined {
    return this.resourceTypes().find((t) => groupVersionOf(t) === p.apiVersion && t.resource === p.resource)
      ?.kind
  }

  /**
   * Stores `obj` at `p` as the real server does after admission: uid and creationTimestamp kept
   * from `existing` (else new), generation bumped when spec changes, a new resourceVersion; then the
   * watch event and the controller's turn.
   */
  private commit(p: ParsedPath, obj: KubeObject, existing: KubeObject | undefined): KubeObject {
    if (p.namespace !== undefined) this.ensureNamespace(p.namespace)
    const name = p.name ?? obj.metadata.name
    const before = existing?.metadata
    const specChanged = JSON.stringify(obj.spec) !== JSON.stringify(existing?.spec)
    const generation =
      obj.spec === undefined ? undefined : before ? (before.generation ?? 1) + (specChanged ? 1 : 0) : 1
    const stored: KubeObject = {
      ...obj,
      apiVersion: p.apiVersion,
      kind: obj.kind ?? this.kindOf(p),
      metadata: {
        ...obj.metadata,
        name,
        namespace: p.namespace,
        uid: before?.uid ?? obj.metadata.uid ?? randomUUID(),
        creationTimestamp:
          before?.creationTimestamp ??
          obj.metadata.creationTimestamp ??
          new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        ...(generation === undefined ? {} : { generation }),
        resourceVersion: String(++this.rv),
      },
    }
    this.objects.set(keyOf({ ...p, name }), stored)
    this.hub.record({
      rv: this.rv,
      type: existing ? 'MODIFIED' : 'ADDED',
      collection: `${p.apiVersion}|${p.resource}`,
      object: stored,
      previous: existing,
    })
    this.controllers.written(p.apiVersion, p.resource, stored)
    return stored
  }

  /**
   * Creates the Namespace `name` if there is none. The real server refuses objects in a namespace
   * that does not exist (404); the fake has always taken them, and lists their namespace instead.
   */
  private ensureNamespace(name: string): void {
    const p = { apiVersion: 'v1', resource: 'namespaces', name }
    if (this.objects.has(keyOf(p))) return
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }
    this.commit(p, this.controllers.admit('namespaces', ns, undefined), undefined)
  }

  /** Deletes, with a DELETED event; objects it controls or owns follow unless orphaned (the GC's job). */
  private remove(p: ParsedPath, existing: KubeObject, orphan: boolean): void {
    this.objects.delete(keyOf(p))
    this.hub.record({
      rv: ++this.rv,
      type: 'DELETED',
      collection: `${p.apiVersion}|${p.resource}`,
      object: { ...existing, metadata: { ...existing.metadata, resourceVersion: String(this.rv) } },
    })
    const uid = existing.metadata.uid
    if (orphan || !uid) return
    for (const [key, obj] of [...this.objects.entries()]) {
      const refs = (obj.metadata.ownerReferences ?? []) as Array<{ uid?: string }>
      if (!refs.some((r) => r.uid === uid) || !this.objects.has(key)) continue
      const [apiVersion = '', resource = '', namespace, name] = key.split('|')
      this.remove({ apiVersion, resource, namespace: namespace || undefined, name }, obj, false)
    }
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // a wedged server: the request stays unanswered until the client gives up or comeBack/stop
    if (this.mode === 'hang') return
    const url = new URL(req.url ?? '/', 'http://fake')
    const rawBytes = await readBody(req)
    const raw = rawBytes.toString()
    const contentType = req.headers['content-type'] ?? ''
    // typed clients send DeleteOptions as protobuf, which the object decoder does not know
    const deleteOptions = req.method === 'DELETE' ? protobufDeleteOptions(rawBytes) : undefined
    let body: unknown = deleteOptions
    try {
      body ??=
        rawBytes.length === 0
          ? undefined
          : contentType.startsWith('application/vnd.kubernetes.protobuf')
            ? decodeProtobufObject(rawBytes)
            : contentType.startsWith('application/apply-patch+yaml')
              ? parseYaml(raw, 'apply patch').value
              : (JSON.parse(raw) as unknown)
    } catch (err) {
      if (err instanceof UnsupportedProtobufError)
        return send(res, 415, status(415, 'UnsupportedMediaType', err.message))
      return send(res, 400, status(400, 'BadRequest', 'request body is not JSON'))
    }
    const method = req.method ?? 'GET'
    this.requests.push({ method, path: url.pathname, query: url.searchParams, body })
    // public information, as kube-apiserver's system:public-info-viewer role grants it to anyone
    if (method === 'GET' && url.pathname === '/version')
      return send(res, 200, versionInfo(this.recordedKubernetesVersion()))
    const health = method === 'GET' ? healthResponse(url.pathname, url.searchParams) : undefined
    if (health) return sendText(res, health.code, health.body)
    if (req.headers.authorization !== `Bearer ${ADMIN_TOKEN}`)
      return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'))

    const rule = this.failRules.find(
      (r) =>
        (r.method ?? method) === method &&
        url.pathname.includes(r.pathIncludes) &&
        (r.bodyIncludes === undefined || JSON.stringify(body ?? null).includes(r.bodyIncludes)) &&
        (r.times ?? 1) > 0,
    )
    if (rule) {
      rule.times = (rule.times ?? 1) - 1
      return send(
        res,
        rule.status,
        status(rule.status, rule.reason ?? 'InternalError', rule.message ?? 'injected failure'),
      )
    }
    if (method === 'GET') {
      const discovery = this.discovery(url.pathname, req.headers.host ?? '')
      if (discovery) return send(res, 200, discovery)
    }
    const p = parsePath(url.pathname)
    if (!p) return send(res, 404, status(404, 'NotFound', `no route for ${url.pathname}`))
    if (p.resource === 'pods' && p.subresource === 'eviction' && p.apiVersion === 'v1')
      return this.respondEviction(res, p, method, body)
    if (p.subresource && p.subresource !== 'status')
      return send(res, 404, status(404, 'NotFound', `the fake serves no ${p.subresource} subresource`))
    if (this.isCreateOnly(p)) return this.respondReview(res, p, method, body)

    const accept = req.headers.accept
    try {
      if (method === 'GET' && !p.name) return this.respondList(res, p, url.searchParams, accept)
      if (method === 'GET' && p.name && !p.subresource && tableVersionWanted(accept)) {
        const found = this.objects.get(keyOf(p))
        if (!found) return send(res, 404, status(404, 'NotFound', `${p.resource} "${p.name}" not found`))
        const meta = { resourceVersion: found.metadata.resourceVersion }
        return send(res, 200, this.table([found], p, url.searchParams, accept, meta))
      }
    } catch (err) {
      if (err instanceof SelectorError || err instanceof TableRequestError)
        return send(res, 400, status(400, 'BadRequest', err.message))
      throw err
    }
    if (method === 'POST' && !p.name) {
      const created = asStored(p, body as KubeObject)
      // a custom resource with a status subresource is created without the status it was sent with
      if (this.hasStatusSubresource(p.apiVersion, p.resource)) delete created.status
      return this.respondCreate(res, p, created)
    }
    const key = keyOf(p)
    const existing = this.objects.get(key)
    // server-side apply creates what is missing (helm 4 applies every object this way)
    const apply = method === 'PATCH' && contentType.startsWith('application/apply-patch')
    if (!existing && (method !== 'PUT' || p.subresource) && !apply)
      return send(res, 404, status(404, 'NotFound', `${p.resource} "${p.name}" not found`))
    switch (method) {
      case 'GET':
        return send(res, 200, existing)
      case 'DELETE': {
        const opts = (body ?? {}) as DeleteOptions
        const policy = url.searchParams.get('propagationPolicy') ?? opts.propagationPolicy
        const dryRun = url.searchParams.has('dryRun') || (opts.dryRun ?? []).length > 0
        if (existing && !dryRun) this.remove(p, existing, policy === 'Orphan')
        return send(res, 200, status(200, 'Success', 'deleted'))
      }
      case 'PUT':
      case 'PATCH': {
        const patched =
          method !== 'PATCH'
            ? body
            : contentType.startsWith('application/json-patch')
              ? jsonPatch(existing, body)
              : contentType.startsWith('application/strategic-merge-patch')
                ? strategicMergePatch(existing, body)
                : mergePatch(existing, body) // merge patch, and server-side apply alike
        const incoming = asStored(p, patched as KubeObject)
        const wanted = incoming.metadata?.resourceVersion
        if (method === 'PUT' && existing && wanted && wanted !== existing.metadata.resourceVersion)
          return send(
            res,
            409,
            status(
              409,
              'Conflict',
              `the object has been modified; please apply your changes to the latest version`,
            ),
          )
        // a custom resource with a status subresource keeps its status on writes to the object
        if (!p.subresource && this.hasStatusSubresource(p.apiVersion, p.resource))
          incoming.status = existing?.status
        const admitted = this.controllers.admit(p.resource, incoming, existing, p.subresource)
        const stored = this.commit(
          p,
          { ...admitted, metadata: { ...admitted.metadata, name: p.name ?? '' } },
          existing,
        )
        return send(res, existing ? 200 : 201, stored)
      }
      default:
        return send(res, 405, status(405, 'MethodNotAllowed', `${method} not supported`))
    }
  }

  /** /api, /apis, each group version's resource list and OpenAPI; undefined for any other path. */
  private discovery(pathname: string, host: string): unknown {
    const parts = pathname.split('/').filter(Boolean)
    if (parts.length === 1 && parts[0] === 'api') return apiVersions(host)
    if (parts.length === 1 && parts[0] === 'apis') return apiGroupList(this.resourceTypes())
    if (parts.length === 2 && parts[0] === 'api') return apiResourceList(this.resourceTypes(), parts[1] ?? '')
    if (parts.length === 3 && parts[0] === 'apis')
      return apiResourceList(this.resourceTypes(), `${parts[1]}/${parts[2]}`)
    if (pathname === '/openapi/v3') return openApiV3Root(this.resourceTypes())
    if (parts[0] === 'openapi' && parts[1] === 'v3')
      return openApiV3Document(this.resourceTypes(), parts.slice(2).join('/'))
    return undefined
  }

  /**
   * A Table of `objects` if `accept` asks for one, else undefined (as kube-apiserver's content
   * negotiation does: kubectl asks for a Table first and takes JSON when there is none).
   */
  private table(
    objects: KubeObject[],
    p: ParsedPath,
    q: URLSearchParams,
    accept: string | undefined,
    listMeta: TableListMeta,
  ) {
    const version = tableVersionWanted(accept)
    if (!version) return undefined
    return asTable(objects, printerFor(p.apiVersion, p.resource), {
      version,
      includeObject: includeObjectOf(q),
      listMeta,
    })
  }

  private isCreateOnly(p: ParsedPath): boolean {
    return this.resourceTypes().some(
      (t) => t.createOnly && groupVersionOf(t) === p.apiVersion && t.resource === p.resource,
    )
  }

  /** A review (SelfSubjectReview): answered, never stored; create is its only verb. */
  private respondReview(res: http.ServerResponse, p: ParsedPath, method: string, body: unknown) {
    if (method !== 'POST' || p.name)
      return send(
        res,
        405,
        status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
      )
    const kind = (body as { kind?: unknown } | undefined)?.kind
    if (kind !== undefined && kind !== 'SelfSubjectReview')
      return send(res, 400, status(400, 'BadRequest', `a ${String(kind)} is no SelfSubjectReview`))
    send(res, 201, selfSubjectReview(p.apiVersion))
  }

  private respondList(
    res: http.ServerResponse,
    p: ParsedPath,
    q: URLSearchParams,
    accept: string | undefined,
  ) {
    const labels = labelMatcher(q.get('labelSelector'))
    const fields = fieldMatcher(q.get('fieldSelector'), p.resource)
    const matches = (o: KubeObject) => labels(o) && fields(o)
    if (q.get('watch') === 'true' || q.get('watch') === '1')
      return this.respondWatch(res, p, q, matches, accept)
    const all = this.select(p, matches)
    const offset = q.get('continue')
      ? Number(Buffer.from(q.get('continue') ?? '', 'base64url').toString())
      : 0
    if (!Number.isInteger(offset) || offset < 0)
      return send(res, 410, status(410, 'Expired', 'continue token is not valid'))
    const limit = Number(q.get('limit') ?? 0)
    const page = limit > 0 ? all.slice(offset, offset + limit) : all.slice(offset)
    const next =
      limit > 0 && offset + limit < all.length
        ? Buffer.from(String(offset + limit)).toString('base64url')
        : undefined
    const kind = `${page[0]?.kind ?? this.kindOf(p) ?? ''}List`
    const metadata = {
      resourceVersion: String(this.rv),
      ...(next ? { continue: next, remainingItemCount: all.length - offset - page.length } : {}),
    }
    const table = this.table(page, p, q, accept, metadata)
    send(res, 200, table ?? { apiVersion: p.apiVersion, kind, metadata, items: page })
  }

  private respondWatch(
    res: http.ServerResponse,
    p: ParsedPath,
    q: URLSearchParams,
    matches: Matcher,
    accept: string | undefined,
  ) {
    const rv = q.get('resourceVersion')
    const from = rv ? Number(rv) : 0
    if (!Number.isInteger(from) || from < 0)
      return send(res, 400, status(400, 'BadRequest', `invalid resourceVersion "${rv}"`))
    const version = tableVersionWanted(accept)
    // read before the stream starts: a bad includeObject is a 400, not a broken stream
    const includeObject = version && includeObjectOf(q)
    const printer = printerFor(p.apiVersion, p.resource)
    const asRow =
      version && includeObject
        ? (object: KubeObject) =>
            asTable([object], printer, {
              version,
              includeObject,
              listMeta: { resourceVersion: object.metadata.resourceVersion },
            })
        : undefined
    const initial = q.get('sendInitialEvents')
    this.hub.serve(res, {
      collection: `${p.apiVersion}|${p.resource}`,
      namespace: p.namespace,
      matches,
      resourceVersion: from,
      sendInitialEvents: initial === null ? undefined : initial === 'true',
      allowWatchBookmarks: q.get('allowWatchBookmarks') === 'true',
      timeoutSeconds: Number(q.get('timeoutSeconds') ?? 0) || undefined,
      current: () => this.select(p, matches),
      currentRv: () => this.rv,
      kind: this.kindOf(p) ?? '',
      apiVersion: p.apiVersion,
      encode: asRow,
    })
  }

  /** POST pods/NAME/eviction (fake-apiserver-eviction.ts): the pod goes, or the refusal says why. */
  private respondEviction(res: http.ServerResponse, p: ParsedPath, method: string, body: unknown) {
    if (method !== 'POST')
      return send(
        res,
        405,
        status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'),
      )
    const pod = this.objects.get(
      keyOf({ apiVersion: p.apiVersion, resource: p.resource, namespace: p.namespace, name: p.name }),
    )
    if (!pod) return send(res, 404, status(404, 'NotFound', `pods "${p.name}" not found`))
    const inNamespace = { apiVersion: 'v1', resource: 'pods', namespace: p.namespace }
    const budgets = this.select({
      apiVersion: 'policy/v1',
      resource: 'poddisruptionbudgets',
      namespace: p.namespace,
    })
    const decision = decideEviction(pod, body, budgets, this.select(inNamespace))
    if (!decision.evict)
      return send(res, decision.code, {
        ...status(decision.code, decision.reason, decision.message),
        ...(decision.causes ? { details: { causes: decision.causes } } : {}),
      })
    this.remove({ ...inNamespace, name: pod.metadata.name }, pod, false)
    send(res, 201, status(201, 'Success', ''))
  }

  private respondCreate(res: http.ServerResponse, p: ParsedPath, obj: KubeObject) {
    if (!obj?.metadata?.name) return send(res, 422, status(422, 'Invalid', 'metadata.name is required'))
    const target = { ...p, name: obj.metadata.name }
    if (this.objects.has(keyOf(target)))
      return send(
        res,
        409,
        status(409, 'AlreadyExists', `${p.resource} "${obj.metadata.name}" already exists`),
      )
    // identity is the server's to give: what a client sends for these is dropped
    const {
      uid: _uid,
      resourceVersion: _rv,
      generation: _gen,
      creationTimestamp: _ts,
      ...metadata
    } = obj.metadata
    const admitted = this.controllers.admit(
      p.resource,
      { ...obj, metadata: { ...metadata, name: obj.metadata.name } },
      undefined,
    )
    send(res, 201, this.commit(target, admitted, undefined))
  }
}

export async function startFakeApiServer(): Promise<FakeApiServer> {
  return new FakeApiServer().start()
}
