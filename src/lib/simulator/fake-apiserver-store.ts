/**
 * Where the FakeApiServer TEST DOUBLE keeps its objects: a Map in memory, or a DirStore of JSON files
 * that another process (the kubeadm contract fake) reads and adds to. Keys are
 * `apiVersion|resource|namespace|name`. Writes by another process reach the fake's lists and gets
 * but raise no watch events: only writes through the API are seen by watchers.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { KubeObject } from './fake-apiserver.js'

export const keyOf = (p: { apiVersion: string; resource: string; namespace?: string; name?: string }) =>
  `${p.apiVersion}|${p.resource}|${p.namespace ?? ''}|${p.name ?? ''}`

/** Where objects live: a Map, or a DirStore with the same four operations. */
export interface ObjectStore {
  get(key: string): KubeObject | undefined
  set(key: string, obj: KubeObject): unknown
  has(key: string): boolean
  delete(key: string): unknown
  entries(): Iterable<[string, KubeObject]>
}

/** Objects as files, so that another process (the kubeadm fake) sees and adds to them. */
export class DirStore implements ObjectStore {
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
      // namespaces/<ns>/<resource>/<name>.json is a namespaced object; namespaces/<name>.json a Namespace
      const namespace = rel[0] === 'namespaces' && rel.length > 2 ? rel[1] : undefined
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
