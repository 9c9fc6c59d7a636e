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
