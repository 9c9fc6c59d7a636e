/**
 * FakeApiServer — a TEST DOUBLE for the Kubernetes API (no kube-apiserver can run on these
 * machines). Over HTTPS with a test CA it serves core (/api/v1) and group (/apis/<group>/<version>)
 * resources, namespaced or cluster-scoped: list with limit/continue paging and labelSelector
 * equality; get, create (409 on exists), replace (409 on a stale resourceVersion), merge, strategic
 * merge (as a merge), JSON and server-side-apply patches (apply creates), delete; Status objects on
 * errors. For the real helm 3/4 and kubectl (test/upgrade/helm-api.test.ts holds it to them) it also
 * serves discovery (/version, /api, /apis, resource lists; a stored CRD registers its resources and
 * is Established at once), OpenAPI v3 documents that leave validation to the server, and decodes the
 * protobuf bodies of client-go's typed clients for Secrets, ConfigMaps and Namespaces. Like the real
 * server it authenticates every request (the bearer token of its kubeconfig, else 401) and stores a
 * Secret's write-only stringData as base64 data. It records every request and can be told to fail
 * requests. Not yet: watch streams (a watch gets the list), readiness of workloads.
 *
 * With `dir` its objects live as JSON files there (`namespaces/<ns>/<resource>/<name>.json`,
 * cluster-scoped `<resource>/<name>.json`, a group's resource as `<resource>.<group>`): the storage
 * the kubeadm contract fake reads and writes, as kubeadm would through this API.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { parseYaml } from '../../src/lib/yaml/index.js'
import {
  apiGroupList,
  apiResourceList,
  apiVersions,
  BUILT_IN_TYPES,
  crdTypes,
  openApiV3Document,
  openApiV3Root,
  type ResourceType,
} from './fake-apiserver-catalog.js'
import { decodeProtobufObject, UnsupportedProtobufError } from './fake-apiserver-protobuf.js'
import { localhostCert } from './tls-cert.js'

export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata: {
    name: string
    namespace?: string
    resourceVersion?: string
    labels?: Record<string, string>
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

interface ParsedPath {
  apiVersion: string
  namespace?: string
  resource: string
  name?: string
  subresource?: string
}

export interface FailRule {
  method?: string
  pathIncludes: string
  status: number
  /** How many matching requests fail; default 1. */
  times?: number
}

/** The bearer token of this server's kubeconfig: the cluster admin's credentials. */
const ADMIN_TOKEN = 'fake-token'

export interface FakeApiServerOptions {
  /** Keep the objects as files here (see above) instead of in memory. */
  dir?: string
}

export class FakeApiServer {
  readonly requests: RecordedRequest[] = []
  private readonly objects: ObjectStore
  private readonly failRules: FailRule[] = []
  private revision = 1
  private server?: https.Server
  url = ''

  constructor(opts: FakeApiServerOptions = {}) {
    this.objects = opts.dir ? new DirStore(opts.dir) : new Map<string, KubeObject>()
  }

  async start(): Promise<this> {
    const { certPem, keyPem } = localhostCert()
    this.server = https.createServer({ cert: certPem, key: keyPem }, (req, res) => void this.handle(req, res))
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve))
    const { port } = this.server.address() as AddressInfo
    this.url = `https://127.0.0.1:${port}`
    return this
  }

  async stop(): Promise<void> {
    if (!this.server) return
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server?.close(() => resolve()))
    this.server = undefined
  }

  /** A kubeconfig (YAML) pointing at this server. */
  kubeconfig(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: fake, cluster: {server: "${this.url}", certificate-authority-data: ${Buffer.from(localhostCert().certPem).toString('base64')}}}]`,
      `users: [{name: fake, user: {token: ${ADMIN_TOKEN}}}]`,
      'contexts: [{name: fake, context: {cluster: fake, user: fake}}]',
      'current-context: fake',
      '',
    ].join('\n')
  }

  /** Seeds an object at `/api/v1` (core) or `/apis/<group>/<version>`, under `resource` (plural). */
  put(apiVersion: string, resource: string, obj: KubeObject): void {
    const key = keyOf({ apiVersion, resource, namespace: obj.metadata.namespace, name: obj.metadata.name })
    this.objects.set(key, { ...obj, metadata: { ...obj.metadata, resourceVersion: String(this.revision++) } })
  }

  get(apiVersion: string, resource: string, name: string, namespace?: string): KubeObject | undefined {
    return this.objects.get(keyOf({ apiVersion, resource, namespace, name }))
  }

  list(apiVersion: string, resource: string, namespace?: string): KubeObject[] {
    return this.select({ apiVersion, resource, namespace })
  }

  failOn(rule: FailRule): void {
    this.failRules.push({ times: 1, ...rule })
  }

  private select(p: ParsedPath, labelSelector?: string): KubeObject[] {
    const prefix = `${p.apiVersion}|${p.resource}|`
    const wantLabels = parseLabelSelector(labelSelector)
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, obj]) => obj)
      .filter((obj) => p.namespace === undefined || obj.metadata.namespace === p.namespace)
      .filter((obj) => Object.entries(wantLabels).every(([k, v]) => obj.metadata.labels?.[k] === v))
      .sort((a, b) =>
        keyOf({ ...p, name: a.metadata.name, namespace: a.metadata.namespace }).localeCompare(
          keyOf({ ...p, name: b.metadata.name, namespace: b.metadata.namespace }),
        ),
      )
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake')
    const rawBytes = await readBody(req)
    const raw = rawBytes.toString()
    const contentType = req.headers['content-type'] ?? ''
    let body: unknown
    try {
      body =
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
    if (req.headers.authorization !== `Bearer ${ADMIN_TOKEN}`)
      return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'))

    const rule = this.failRules.find(
      (r) => (r.method ?? method) === method && url.pathname.includes(r.pathIncludes) && (r.times ?? 1) > 0,
    )
    if (rule) {
      rule.times = (rule.times ?? 1) - 1
      return send(res, rule.status, status(rule.status, 'InternalError', 'injected failure'))
    }
    if (method === 'GET') {
      const discovery = this.discovery(url.pathname, req.headers.host ?? '')
      if (discovery) return send(res, 200, discovery)
    }
    const p = parsePath(url.pathname)
    if (!p) return send(res, 404, status(404, 'NotFound', `no route for ${url.pathname}`))

    if (method === 'GET' && !p.name) return this.respondList(res, p, url.searchParams)
    if (method === 'POST' && !p.name) return this.respondCreate(res, p, asStored(p, body as KubeObject))
    const key = keyOf(p)
    const existing = this.objects.get(key)
    // server-side apply creates what is missing (helm 4 applies every object this way)
    const apply = method === 'PATCH' && contentType.startsWith('application/apply-patch')
    if (!existing && method !== 'PUT' && !apply)
      return send(res, 404, status(404, 'NotFound', `${p.resource} "${p.name}" not found`))
    switch (method) {
      case 'GET':
        return send(res, 200, existing)
      case 'DELETE':
        this.objects.delete(key)
        return send(res, 200, status(200, 'Success', 'deleted'))
      case 'PUT':
      case 'PATCH': {
        const patched =
          method !== 'PATCH'
            ? body
            : contentType.startsWith('application/json-patch')
              ? jsonPatch(existing, body)
              : mergePatch(existing, body) // merge, strategic merge (maps) and apply alike
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
        const next = {
          ...incoming,
          metadata: {
            ...incoming.metadata,
            name: p.name ?? '',
            namespace: p.namespace,
            resourceVersion: String(this.revision++),
          },
        }
        this.objects.set(key, next)
        return send(res, existing ? 200 : 201, next)
      }
      default:
        return send(res, 405, status(405, 'MethodNotAllowed', `${method} not supported`))
    }
  }

  /** Built-in resources plus those the stored CRDs register, as the discovery documents list them. */
  resourceTypes(): ResourceType[] {
    const crds = this.select({ apiVersion: 'apiextensions.k8s.io/v1', resource: 'customresourcedefinitions' })
    return [...BUILT_IN_TYPES, ...crds.flatMap((crd) => crdTypes(crd as Parameters<typeof crdTypes>[0]))]
  }

  /** /version, /api, /apis and each group version's resource list; undefined for any other path. */
  private discovery(pathname: string, host: string): unknown {
    const parts = pathname.split('/').filter(Boolean)
    if (pathname === '/version')
      return { major: '1', minor: '31', gitVersion: 'v1.31.13', platform: 'linux/amd64', goVersion: 'go1.22' }
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

  private respondList(res: http.ServerResponse, p: ParsedPath, q: URLSearchParams) {
    const all = this.select(p, q.get('labelSelector') ?? undefined)
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
    const kind = page[0]?.kind ? `${page[0].kind}List` : 'List'
    send(res, 200, {
      apiVersion: p.apiVersion,
      kind,
      metadata: {
        resourceVersion: String(this.revision),
        ...(next ? { continue: next, remainingItemCount: all.length - offset - page.length } : {}),
      },
      items: page,
    })
  }

  private respondCreate(res: http.ServerResponse, p: ParsedPath, obj: KubeObject) {
    if (!obj?.metadata?.name) return send(res, 422, status(422, 'Invalid', 'metadata.name is required'))
    const key = keyOf({ ...p, name: obj.metadata.name })
    if (this.objects.has(key))
      return send(
        res,
        409,
        status(409, 'AlreadyExists', `${p.resource} "${obj.metadata.name}" already exists`),
      )
    const stored = {
      ...obj,
      metadata: { ...obj.metadata, namespace: p.namespace, resourceVersion: String(this.revision++) },
    }
    this.objects.set(key, stored)
    send(res, 201, stored)
  }
}

export async function startFakeApiServer(): Promise<FakeApiServer> {
  return new FakeApiServer().start()
}

function parsePath(pathname: string): ParsedPath | undefined {
  const parts = pathname.split('/').filter(Boolean)
  let apiVersion: string
  let rest: string[]
  if (parts[0] === 'api' && parts[1]) {
    apiVersion = parts[1]
    rest = parts.slice(2)
  } else if (parts[0] === 'apis' && parts[1] && parts[2]) {
    apiVersion = `${parts[1]}/${parts[2]}`
    rest = parts.slice(3)
  } else return undefined
  let namespace: string | undefined
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1]
    rest = rest.slice(2)
  }
  const [resource, name, subresource] = rest
  if (!resource) return undefined
  return { apiVersion, namespace, resource, name, subresource }
}

const keyOf = (p: { apiVersion: string; resource: string; namespace?: string; name?: string }) =>
  `${p.apiVersion}|${p.resource}|${p.namespace ?? ''}|${p.name ?? ''}`

function parseLabelSelector(sel?: string): Record<string, string> {
  if (!sel) return {}
  return Object.fromEntries(
    sel.split(',').map((kv) => kv.split('=').map((s) => s.trim()) as [string, string]),
  )
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

/** RFC 6902 add/replace/remove on a copy (what helm and kubectl send as json-patch). */
function jsonPatch(target: unknown, ops: unknown): unknown {
  const doc = structuredClone(target) as Record<string, unknown>
  for (const op of (Array.isArray(ops) ? ops : []) as Array<{ op: string; path: string; value?: unknown }>) {
    const keys = op.path
      .split('/')
      .slice(1)
      .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'))
    const last = keys.pop() ?? ''
    let parent: Record<string, unknown> = doc
    for (const k of keys) parent = (parent[k] ??= {}) as Record<string, unknown>
    if (op.op === 'remove') delete parent[last]
    else if (op.op === 'add' || op.op === 'replace') parent[last] = op.value
  }
  return doc
}

function status(code: number, reason: string, message: string) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: code < 400 ? 'Success' : 'Failure',
    reason,
    message,
    code,
  }
}

function send(res: http.ServerResponse, code: number, body: unknown) {
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

/** Where objects live: a Map, or a DirStore with the same four operations. */
interface ObjectStore {
  get(key: string): KubeObject | undefined
  set(key: string, obj: KubeObject): unknown
  has(key: string): boolean
  delete(key: string): unknown
  entries(): Iterable<[string, KubeObject]>
}

/** A CRD as the apiextensions controller leaves it once its names are accepted: established at once. */
function establishedCrd(obj: KubeObject): KubeObject {
  const spec = obj.spec as { names?: unknown } | undefined
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
  const condition = (type: string) => ({
    type,
    status: 'True',
    reason: type,
    message: '',
    lastTransitionTime: now,
  })
  return {
    ...obj,
    status: {
      acceptedNames: spec?.names ?? {},
      conditions: [condition('NamesAccepted'), condition('Established')],
      storedVersions: [],
    },
  }
}

/** As the API server stores objects: a Secret's stringData is write-only, merged into base64 data. */
function asStored(p: ParsedPath, obj: KubeObject): KubeObject {
  if (p.resource === 'customresourcedefinitions' && obj?.metadata) return establishedCrd(obj)
  if (p.resource !== 'secrets' || typeof obj?.stringData !== 'object' || obj.stringData === null) return obj
  const { stringData, ...rest } = obj
  const data = { ...(rest.data as Record<string, string> | undefined) }
  for (const [k, v] of Object.entries(stringData as Record<string, string>))
    data[k] = Buffer.from(v).toString('base64')
  return { ...rest, data }
}

/** Objects as files, so that another process (the kubeadm fake) sees and adds to them. */
class DirStore implements ObjectStore {
  constructor(private readonly dir: string) {}

  get(key: string): KubeObject | undefined {
    try {
      const obj = JSON.parse(readFileSync(this.file(key), 'utf8')) as KubeObject
      // objects another process wrote carry no resourceVersion yet
      return { ...obj, metadata: { ...obj.metadata, resourceVersion: obj.metadata.resourceVersion ?? '1' } }
    } catch {
      return undefined
    }
  }

  has(key: string): boolean {
    return this.get(key) !== undefined
  }

  set(key: string, obj: KubeObject): void {
    const file = this.file(key)
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, JSON.stringify(obj) + '\n', { mode: key.includes('|secrets|') ? 0o600 : 0o644 })
  }

  delete(key: string): void {
    rmSync(this.file(key), { force: true })
  }

  *entries(): Iterable<[string, KubeObject]> {
    for (const file of walk(this.dir)) {
      const rel = path.relative(this.dir, file).split(path.sep)
      const namespace = rel[0] === 'namespaces' ? rel[1] : undefined
      const [folder, name] = namespace === undefined ? rel : rel.slice(2)
      if (!folder || !name?.endsWith('.json')) continue
      const dot = folder.indexOf('.')
      const resource = dot < 0 ? folder : folder.slice(0, dot)
      const obj = this.get(`x|${folder}|${namespace ?? ''}|${name.slice(0, -5)}`)
      if (!obj) continue
      const apiVersion = dot < 0 ? 'v1' : (obj.apiVersion ?? `${folder.slice(dot + 1)}/v1`)
      yield [keyOf({ apiVersion, resource, namespace, name: name.slice(0, -5) }), obj]
    }
  }

  /** key = apiVersion|resource|namespace|name; a group's resource folder is `<resource>.<group>`. */
  private file(key: string): string {
    const [apiVersion = '', resource = '', namespace = '', name = ''] = key.split('|')
    const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : undefined
    const folder = apiVersion === 'x' || !group ? resource : `${resource}.${group}`
    return namespace
      ? path.join(this.dir, 'namespaces', namespace, folder, `${name}.json`)
      : path.join(this.dir, folder, `${name}.json`)
  }
}

function* walk(dir: string): Iterable<string> {
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return
  }
  for (const e of entries) {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) yield* walk(full)
    else yield full
  }
}
