/**
 * Table responses of the FakeApiServer TEST DOUBLE, as kube-apiserver gives them to a client whose
 * Accept header asks for `application/json;as=Table;v=v1;g=meta.k8s.io` (kubectl's human-readable
 * `get`): a meta.k8s.io Table whose columns and cells are the type's printer's
 * (fake-apiserver-printers.ts), or NAME and AGE for every other resource, as kube-apiserver serves
 * a custom resource without additionalPrinterColumns. Each row carries the object as
 * `includeObject` asks: its metadata (PartialObjectMetadata, the default), all of it, or nothing.
 */
import type { KubeObject } from './fake-apiserver.js'
import { AGE_COLUMN, NAME_COLUMN, PRINTERS, type Printer } from './fake-apiserver-printers.js'

export type TableVersion = 'v1' | 'v1beta1'
export type IncludeObject = 'Metadata' | 'Object' | 'None'

export class TableRequestError extends Error {}

/**
 * The Table version the client prefers, or undefined when it prefers plain JSON: the first media
 * range of its Accept header that the server can produce decides, as the real content negotiation
 * does for clients that list them in order of preference (kubectl, client-go).
 */
export function tableVersionWanted(accept: string | undefined): TableVersion | undefined {
  for (const range of (accept ?? '').split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim())
    const param = new Map(params.map((p) => p.split('=').map((x) => x.trim()) as [string, string]))
    if (type !== 'application/json' && type !== '*/*') continue
    const as = param.get('as')
    if (as === undefined) return undefined
    const version = param.get('v')
    if (as === 'Table' && param.get('g') === 'meta.k8s.io' && (version === 'v1' || version === 'v1beta1'))
      return version
  }
  return undefined
}

/** The `includeObject` query parameter; anything else is the 400 the real server answers. */
export function includeObjectOf(q: URLSearchParams): IncludeObject {
  const v = q.get('includeObject') ?? 'Metadata'
  if (v === 'Metadata' || v === 'Object' || v === 'None') return v
  throw new TableRequestError(`unrecognized includeObject value: "${v}"`)
}

/** For resources without a printer: a CRD's default columns (Name, and Age of type date). */
const GENERIC: Printer = {
  columns: [NAME_COLUMN, { ...AGE_COLUMN, type: 'date' }],
  cells: (obj, age) => [obj.metadata.name, age(obj.metadata.creationTimestamp)],
}

export function printerFor(apiVersion: string, resource: string): Printer {
  return PRINTERS[`${apiVersion}|${resource}`] ?? GENERIC
}

export interface TableListMeta {
  resourceVersion?: string
  continue?: string
  remainingItemCount?: number
}

export function asTable(
  objects: readonly KubeObject[],
  printer: Printer,
  opts: { version: TableVersion; includeObject: IncludeObject; listMeta: TableListMeta; now?: Date },
) {
  const now = (opts.now ?? new Date()).getTime()
  const age = (timestamp: unknown) => {
    const t = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN
    return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t)
  }
  const apiVersion = `meta.k8s.io/${opts.version}`
  return {
    kind: 'Table',
    apiVersion,
    metadata: opts.listMeta,
    columnDefinitions: printer.columns,
    rows: objects.map((obj) => ({
      cells: printer.cells(obj, age),
      object: rowObject(obj, opts.includeObject, apiVersion),
    })),
  }
}

function rowObject(obj: KubeObject, include: IncludeObject, apiVersion: string): unknown {
  if (include === 'None') return null
  if (include === 'Object') return obj
  return { kind: 'PartialObjectMetadata', apiVersion, metadata: obj.metadata }
}

/**
 * apimachinery's duration.HumanDuration, which kube-apiserver's printers use for AGE: seconds up to
 * 2 minutes, then ever coarser units (`5m30s`, `3h12m`, `4d6h`, `2y41d`).
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000)
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 120) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`
  if (minutes < 180) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`
  if (hours < 48) return `${hours}h`
  const days = Math.floor(hours / 24)
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`
  if (hours < 24 * 365 * 2) return `${days}d`
  const years = Math.floor(days / 365)
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`
  return `${years}y`
}
