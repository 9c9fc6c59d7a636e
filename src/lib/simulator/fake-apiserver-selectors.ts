/**
 * Label and field selectors for the FakeApiServer TEST DOUBLE, as the real API server parses them
 * from `labelSelector` / `fieldSelector` query parameters (what kubectl and client-go send:
 * `metav1.LabelSelectorAsSelector(...).String()` and `fields.OneTermEqualSelector(...)`). A selector
 * the real server rejects is a 400 here too (SelectorError), so the fake accepts nothing more.
 */
import type { KubeObject } from './fake-apiserver.js'

export class SelectorError extends Error {}

export type Matcher = (obj: KubeObject) => boolean

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/

/**
 * `a=b,c!=d,e in (f,g),h notin (i),j,!k,l>3`: every requirement must hold. `!=` and `notin` also
 * match objects without the label, as in k8s.io/apimachinery/pkg/labels.
 */
export function labelMatcher(selector: string | null | undefined): Matcher {
  if (!selector?.trim()) return () => true
  const reqs = splitTopLevel(selector).map(parseRequirement)
  return (obj) => {
    const labels = obj.metadata.labels ?? {}
    return reqs.every((r) => r(labels))
  }
}

type Requirement = (labels: Record<string, string>) => boolean

function parseRequirement(raw: string): Requirement {
  const req = raw.trim()
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(req)
  if (set) {
    const key = checkKey(set[1] ?? '')
    const values = (set[3] ?? '').split(',').map((v) => checkValue(v.trim()))
    if (set[2] === 'in') return (l) => key in l && values.includes(l[key] ?? '')
    return (l) => !(key in l) || !values.includes(l[key] ?? '')
  }
  const op = /^([^!=<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$/.exec(req)
  if (op) {
    const key = checkKey(op[1] ?? '')
    const value = checkValue((op[3] ?? '').trim())
    switch (op[2]) {
      case '!=':
        return (l) => l[key] !== value
      case '<':
      case '>': {
        const bound = Number(value)
        if (!Number.isInteger(bound))
          throw new SelectorError(`invalid label selector "${req}": ${value} is not an integer`)
        return (l) =>
          key in l &&
          Number.isInteger(Number(l[key])) &&
          (op[2] === '<' ? Number(l[key]) < bound : Number(l[key]) > bound)
      }
      default:
        return (l) => l[key] === value
    }
  }
  if (req.startsWith('!')) {
    const key = checkKey(req.slice(1).trim())
    return (l) => !(key in l)
  }
  const key = checkKey(req)
  return (l) => key in l
}

/** Splits at commas outside parentheses: `a in (x,y),b` → [`a in (x,y)`, `b`]. */
function splitTopLevel(s: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++
    else if (s[i] === ')') depth--
    else if (s[i] === ',' && depth === 0) {
      out.push(s.slice(start, i))
      start = i + 1
    }
    if (depth < 0) throw new SelectorError(`invalid label selector "${s}": unbalanced parentheses`)
  }
  if (depth !== 0) throw new SelectorError(`invalid label selector "${s}": unbalanced parentheses`)
  out.push(s.slice(start))
  return out
}

function checkKey(key: string): string {
  if (!LABEL_KEY.test(key) || key.length > 317) throw new SelectorError(`invalid label key "${key}"`)
  return key
}

function checkValue(value: string): string {
  if (!LABEL_VALUE.test(value) || value.length > 63)
    throw new SelectorError(`invalid label value: "${value}"`)
  return value
}

/**
 * The field labels the real server supports beyond metadata.name and metadata.namespace, per
 * resource (pkg/registry/<group>/<resource>/strategy.go); any other is "field label not supported".
 */
const FIELD_LABELS: Record<string, readonly string[]> = {
  pods: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  events: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  secrets: ['type'],
  namespaces: ['status.phase'],
  nodes: ['spec.unschedulable'],
  replicasets: ['status.replicas'],
  jobs: ['status.successful'],
}

/** `metadata.name=x,metadata.namespace!=y` (`=`, `==`, `!=`), limited to the resource's field labels. */
export function fieldMatcher(selector: string | null | undefined, resource: string): Matcher {
  if (!selector?.trim()) return () => true
  const terms = selector.split(',').map((term) => {
    const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(term.trim())
    if (!m) throw new SelectorError(`invalid field selector "${term}": expected field=value or field!=value`)
    const field = (m[1] ?? '').trim()
    if (!['metadata.name', 'metadata.namespace', ...(FIELD_LABELS[resource] ?? [])].includes(field))
      throw new SelectorError(`field label not supported: ${field}`)
    const value = m[3] ?? ''
    const negate = m[2] === '!='
    return (obj: KubeObject) => (fieldValue(obj, field) === value) !== negate
  })
  return (obj) => terms.every((t) => t(obj))
}

function fieldValue(obj: KubeObject, field: string): string {
  let at: unknown = obj
  for (const part of field.split('.')) at = (at as Record<string, unknown> | undefined)?.[part]
  // the real server compares strings; absent fields are "" (an empty namespace, an unset node name)
  return at === undefined || at === null ? '' : String(at)
}
