/**
 * Request and object helpers of the FakeApiServer TEST DOUBLE: paths, patches, Status bodies, and
 * what the real server changes in an object as it stores it (a Secret's stringData, a CRD's
 * conditions).
 */
import type http from 'node:http'
import type { KubeObject } from './fake-apiserver.js'

export interface ParsedPath {
  apiVersion: string
  namespace?: string
  resource: string
  name?: string
  subresource?: string
}

export function parsePath(pathname: string): ParsedPath | undefined {
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

export function mergePatch(target: unknown, patch: unknown): unknown {
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
export function jsonPatch(target: unknown, ops: unknown): unknown {
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

export function status(code: number, reason: string, message: string) {
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

export function send(res: http.ServerResponse, code: number, body: unknown) {
  res.writeHead(code, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

/** A plain-text answer (the health endpoints'). */
export function sendText(res: http.ServerResponse, code: number, body: string) {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' })
  res.end(body)
}

export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
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
export function asStored(p: ParsedPath, obj: KubeObject): KubeObject {
  if (p.resource === 'customresourcedefinitions' && obj?.metadata) return establishedCrd(obj)
  if (p.resource !== 'secrets' || typeof obj?.stringData !== 'object' || obj.stringData === null) return obj
  const { stringData, ...rest } = obj
  const data = { ...(rest.data as Record<string, string> | undefined) }
  for (const [k, v] of Object.entries(stringData as Record<string, string>))
    data[k] = Buffer.from(v).toString('base64')
  return { ...rest, data }
}

type Json = Record<string, unknown>
const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const named = (v: unknown): v is Json[] =>
  Array.isArray(v) && v.every((x) => isMap(x) && typeof x.name === 'string')

/**
 * Strategic merge patch as far as helm 3's three-way patches need it: lists of named objects
 * (containers, env, volumes, ports) merge by name, and the directives ($patch, $setElementOrder,
 * $retainKeys, $deleteFromPrimitiveList) are obeyed, never stored. A merge patch would store them
 * and replace whole lists, so that a rolled-back pod template would never equal the old one again.
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isMap(patch)) return patch
  if (patch.$patch === 'replace') return withoutDirectives(patch)
  const out: Json = isMap(target) ? { ...target } : {}
  const orders: Array<[string, unknown]> = []
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch') continue
    if (k.startsWith('$setElementOrder/')) orders.push([k.slice('$setElementOrder/'.length), v])
    else if (k.startsWith('$deleteFromPrimitiveList/')) {
      const key = k.slice('$deleteFromPrimitiveList/'.length)
      const drop = Array.isArray(v) ? v : []
      if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).filter((x) => !drop.includes(x))
    } else if (k === '$retainKeys') continue
    else if (v === null) delete out[k]
    else if (named(v) && named(out[k] ?? [])) out[k] = mergeByName((out[k] ?? []) as Json[], v)
    else if (isMap(v) && v.$patch === 'delete') delete out[k]
    else out[k] = strategicMergePatch(out[k], v)
  }
  if (Array.isArray(patch.$retainKeys))
    for (const k of Object.keys(out)) if (!patch.$retainKeys.includes(k)) delete out[k]
  for (const [key, order] of orders) {
    const list = out[key]
    if (!named(list) || !Array.isArray(order)) continue
    const rank = (x: Json) => {
      const i = order.findIndex((o) => isMap(o) && o.name === x.name)
      return i < 0 ? order.length : i
    }
    out[key] = [...list].sort((a, b) => rank(a) - rank(b))
  }
  return out
}

function mergeByName(base: Json[], patch: Json[]): Json[] {
  const out = [...base]
  for (const item of patch) {
    const i = out.findIndex((x) => x.name === item.name)
    if (item.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1)
    } else if (i >= 0) out[i] = strategicMergePatch(out[i], item) as Json
    else out.push(withoutDirectives(item) as Json)
  }
  return out
}

function withoutDirectives(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutDirectives)
  if (!isMap(v)) return v
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => !k.startsWith('$'))
      .map(([k, x]) => [k, withoutDirectives(x)]),
  )
}
