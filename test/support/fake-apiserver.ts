/**
 * FakeApiServer — a TEST DOUBLE for the Kubernetes API (no kube-apiserver can run on these
 * machines). It speaks, over HTTPS with a test CA, the shapes @kubernetes/client-node uses: core (/api/v1) and group
 * (/apis/<group>/<version>) resources, namespaced or cluster-scoped; list with limit/continue
 * paging and labelSelector equality; get, create (409 on exists), replace (409 on a stale
 * resourceVersion), merge-patch, delete; Status objects on errors. Like the real server it
 * authenticates every request (the bearer token of its kubeconfig, else 401) and stores a Secret's
 * write-only stringData as base64 data. It records every request and can be told to fail requests.
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
    const raw = await readBody(req)
    let body: unknown
    try {
      body = raw ? (JSON.parse(raw) as unknown) : undefined
    } catch {
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
    const p = parsePath(url.pathname)
    if (!p) return send(res, 404, status(404, 'NotFound', `no route for ${url.pathname}`))

    if (method === 'GET' && !p.name) return this.respondList(res, p, url.searchParams)
    if (method === 'POST' && !p.name) return this.respondCreate(res, p, asStored(p, body as KubeObject))
    const key = keyOf(p)
    const existing = this.objects.get(key)
    if (!existing && method !== 'PUT')
      return send(res, 404, status(404, 'NotFound', `${p.resource} "${p.name}" not found`))
    switch (method) {
      case 'GET':
        return send(res, 200, existing)
      case 'DELETE':
        this.objects.delete(key)
        return send(res, 200, status(200, 'Success', 'deleted'))
      case 'PUT':
      case 'PATCH': {
        const incoming = asStored(p, (method === 'PATCH' ? mergePatch(existing, body) : body) as KubeObject)
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

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = ''
    req.on('data', (c: Buffer) => (data += c.toString()))
    req.on('end', () => resolve(data))
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

/** As the API server stores a Secret: stringData is write-only, merged into base64 data. */
function asStored(p: ParsedPath, obj: KubeObject): KubeObject {
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
