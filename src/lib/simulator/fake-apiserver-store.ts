/**
 * Where the FakeApiServer TEST DOUBLE keeps its objects: a Map in memory, or a DirStore of JSON files
 * that another process (the kubeadm contract fake) reads and adds to. Keys are
 * `apiVersion|resource|namespace|name`. Writes by another process reach the fake's lists and gets
 * but raise no watch events: only writes through the API are seen by watchers.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { objectAt, objectFile, type ObjectLocation } from '../../../simulator/api-layout.js'
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
    return this.read(objectFile(this.dir, locationOf(key)))
  }

  private read(file: string): KubeObject | undefined {
    try {
      const obj = JSON.parse(readFileSync(file, 'utf8')) as KubeObject
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
    const file = objectFile(this.dir, locationOf(key))
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, JSON.stringify(obj) + '\n', { mode: key.includes('|secrets|') ? 0o600 : 0o644 })
  }

  delete(key: string): void {
    rmSync(objectFile(this.dir, locationOf(key)), { force: true })
  }

  *entries(): Iterable<[string, KubeObject]> {
    for (const file of walk(this.dir)) {
      const at = objectAt(path.relative(this.dir, file))
      const obj = at && this.read(file)
      if (!at || !obj) continue
      const apiVersion = at.group === undefined ? 'v1' : (obj.apiVersion ?? `${at.group}/v1`)
      yield [keyOf({ ...at, apiVersion }), obj]
    }
  }
}

/** key = apiVersion|resource|namespace|name, as a place in the layout (the group from apiVersion). */
function locationOf(key: string): ObjectLocation {
  const [apiVersion = '', resource = '', namespace = '', name = ''] = key.split('|')
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : undefined
  return { resource, group, namespace: namespace || undefined, name }
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
