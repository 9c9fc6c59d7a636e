/**
 * A one-pass reader for the block-style subset of YAML that configs are written in (nested block
 * maps and sequences, single-line plain and quoted scalars, comments, `[]` and `{}`), about ten
 * times faster than the yaml package's Document (issue 34). It either returns exactly what the
 * full loader would (value, and the offset the full loader gives each key path) or undefined: for
 * anything outside the subset and for any problem at all, so that the full loader, and nothing
 * else, words every error. Plain scalars resolve through the yaml package's own core-schema tags.
 */
import { isScalar, Schema, type ScalarTag } from 'yaml'

/** Where a node starts, and its children's places (a map's by key, with each key's own offset). */
interface Place {
  offset: number
  keys?: Map<string, { keyOffset: number; value: Place }>
  items?: Place[]
}

export interface BlockDocument {
  value: unknown
  /** Offset of the value at `path`, or of its closest existing parent (as the full loader's locator). */
  offsetOf(path: ReadonlyArray<string | number>): number
}

/** Deeper documents go to the full loader; configs nest a handful of levels. */
const MAX_DEPTH = 100
/** The yaml package refuses an implicit key whose `:` is over 1024 chars from its start. */
const MAX_KEY_CHARS = 1000

// Characters that start something other than a plain scalar, or that the subset leaves out
// (control characters, a BOM, Unicode line separators, carriage returns, tabs).
const INDICATOR = /^(?:[[\]{},#&*!|>'"%@`]|[-?:](?:\s|$))/
const MAYBE_NOT_STRING = /^(?:$|[-+.0-9~nNtTfF])/
const OUTSIDE_SUBSET = /[\x00-\x09\x0b-\x1f\x7f-\x9f\ufeff\u2028\u2029]/ // eslint-disable-line no-control-regex
const coreTags = new Schema({}).tags.filter(
  (tag): tag is ScalarTag => tag.default === true && 'test' in tag && tag.test !== undefined,
)

/** Thrown inside the reader to give up; never leaves this module. */
class OutsideSubset extends Error {}
const giveUp = (): never => {
  throw new OutsideSubset()
}

interface Line {
  /** Offset of the line's first character and of its content (after the indentation). */
  start: number
  indent: number
  /** The content, comments included; never empty or a comment alone. */
  text: string
}

export function readBlockSubset(source: string): BlockDocument | undefined {
  if (OUTSIDE_SUBSET.test(source)) return undefined
  try {
    return read(source)
  } catch (err) {
    if (err instanceof OutsideSubset) return undefined
    throw err
  }
}

function read(source: string): BlockDocument | undefined {
  const lines = contentLines(source)
  if (lines.length === 0) return undefined
  let next = 0

  const scalar = (text: string, offset: number): { value: unknown; place: Place } => {
    const body = withoutComment(text)
    if (body === '[]') return { value: [], place: { offset, items: [] } }
    if (body === '{}') return { value: {}, place: { offset, keys: new Map() } }
    return { value: scalarValue(body), place: { offset } }
  }

  /** The node whose lines are indented more than `parentIndent` (a sequence may sit at it). */
  const block = (parentIndent: number, depth: number, seqAtParent: boolean, emptyAt: number) => {
    const line = lines[next]
    if (depth > MAX_DEPTH) giveUp()
    if (
      !line ||
      line.indent < parentIndent ||
      (line.indent === parentIndent && !(seqAtParent && isEntry(line)))
    )
      return { value: null, place: { offset: emptyAt } }
    return isEntry(line) ? sequence(line.indent, depth) : mapping(line.indent, depth)
  }

  const mapping = (indent: number, depth: number): { value: unknown; place: Place } => {
    const value: Record<string, unknown> = {}
    const keys = new Map<string, { keyOffset: number; value: Place }>()
    const offset = (lines[next] as Line).start
    for (let line = lines[next]; line && line.indent === indent && !isEntry(line); line = lines[next]) {
      const { key, rest, restAt } = splitKey(line)
      if (Object.hasOwn(value, key)) giveUp() // a duplicate: the full loader lists them all
      next++
      const got = rest === '' ? block(indent, depth + 1, true, restAt) : inline(rest, restAt, indent)
      // defineProperty: a `__proto__` key stays a plain key instead of replacing the prototype
      if (key === '__proto__')
        Object.defineProperty(value, key, {
          value: got.value,
          enumerable: true,
          writable: true,
          configurable: true,
        })
      else value[key] = got.value
      keys.set(key, { keyOffset: line.start, value: got.place })
    }
    return { value, place: { offset, keys } }
  }

  const sequence = (indent: number, depth: number): { value: unknown; place: Place } => {
    const value: unknown[] = []
    const items: Place[] = []
    const offset = (lines[next] as Line).start
    for (let line = lines[next]; line && line.indent === indent && isEntry(line); line = lines[next]) {
      const rest = line.text.slice(1).trimStart()
      const restAt = line.start + line.text.length - rest.length
      let got
      if (rest === '' || rest.startsWith('#')) {
        next++
        got = block(indent, depth + 1, false, restAt)
      } else if (isKeyLine(rest)) {
        // `- key: value`: a map whose keys line up with this first one
        lines[next] = { start: restAt, indent: indent + (restAt - line.start), text: rest }
        got = mapping(indent + (restAt - line.start), depth + 1)
      } else {
        next++
        got = inline(rest, restAt, indent)
      }
      value.push(got.value)
      items.push(got.place)
    }
    return { value, place: { offset, items } }
  }

  /** A value on its key's or entry's line; the lines after it must not continue it. */
  const inline = (text: string, offset: number, indent: number) => {
    const following = lines[next]
    if (following && following.indent > indent) giveUp() // a multi-line scalar, or worse
    return scalar(text, offset)
  }

  const first = lines[0] as Line
  const root = isEntry(first) ? sequence(first.indent, 0) : mapping(first.indent, 0)
  if (next !== lines.length) return undefined
  return { value: root.value, offsetOf: (path) => offsetOf(root.place, path) }
}

function contentLines(source: string): Line[] {
  const lines: Line[] = []
  for (let start = 0; start < source.length;) {
    let end = source.indexOf('\n', start)
    if (end < 0) end = source.length
    const raw = source.slice(start, end)
    const text = raw.trimStart()
    if (text !== '' && !text.startsWith('#')) {
      if (raw.startsWith('---') || raw.startsWith('...') || text.startsWith('%')) giveUp() // documents
      lines.push({ start: start + raw.length - text.length, indent: raw.length - text.length, text })
    }
    start = end + 1
  }
  return lines
}

const isEntry = (line: Line) => line.text === '-' || line.text.startsWith('- ')

function isKeyLine(text: string): boolean {
  if (text.startsWith('"') || text.startsWith("'")) return /^("[^"\\]*"|'[^']*')\s*:(\s|$)/.test(text)
  return keyColon(text) > 0
}

/** Index of the `:` that ends a plain key, or -1. */
function keyColon(text: string): number {
  for (let i = text.indexOf(':'); i >= 0; i = text.indexOf(':', i + 1)) {
    if (i + 1 === text.length || text[i + 1] === ' ') return i
  }
  return -1
}

function splitKey(line: Line): { key: string; rest: string; restAt: number } {
  const { text } = line
  let keyText: string
  let colon: number
  let key: string
  const quoted = /^("[^"\\]*"|'[^']*')\s*:(\s|$)/.exec(text)
  if (quoted) {
    keyText = quoted[1] as string
    colon = text.indexOf(':', keyText.length)
    key = keyText.slice(1, -1)
  } else {
    colon = keyColon(text)
    if (colon <= 0) giveUp() // not a key: a scalar alone on its line, or flow
    keyText = text.slice(0, colon).trimEnd()
    if (INDICATOR.test(keyText) || keyText.includes(' #') || keyText === '<<') giveUp()
    const resolved = scalarValue(keyText)
    key = resolved === null ? '' : String(resolved)
  }
  if (colon > MAX_KEY_CHARS) giveUp()
  const after = text.slice(colon + 1)
  const rest = after.trimStart()
  const restAt = line.start + colon + 1 + (after.length - rest.length)
  return { key, rest: rest.startsWith('#') ? '' : rest, restAt }
}

/** A single-line scalar's text with its trailing comment; quoted ones without escapes. */
function withoutComment(text: string): string {
  if (text.startsWith('"') || text.startsWith("'")) {
    const m = /^("[^"\\]*"|'[^']*')\s*(#.*)?$/.exec(text)
    return m ? (m[1] as string) : giveUp()
  }
  const hash = text.indexOf(' #')
  return (hash < 0 ? text : text.slice(0, hash)).trimEnd()
}

function scalarValue(body: string): unknown {
  if (body.startsWith('"') || body.startsWith("'")) return body.slice(1, -1)
  if (INDICATOR.test(body) || keyColon(body) >= 0) giveUp() // flow, anchors, tags, block scalars, `a: b: c`
  // every core-schema tag but str needs one of these first characters (null, bool, numbers)
  if (!MAYBE_NOT_STRING.test(body)) return body
  const tag = coreTags.find((t) => t.test?.test(body))
  if (!tag) return body
  const resolved: unknown = tag.resolve(body, giveUp, {}) // bool, null and float tags wrap it
  return isScalar(resolved) ? resolved.value : resolved
}

function offsetOf(root: Place, path: ReadonlyArray<string | number>): number {
  let place = root
  let best = root.offset
  for (const [i, part] of path.entries()) {
    if (place.keys) {
      const entry = place.keys.get(String(part))
      if (!entry) break
      best = entry.keyOffset
      place = entry.value
      // a problem with a key is shown at the key; one inside its value, at the value
      if (i < path.length - 1) best = place.offset
    } else if (place.items && typeof part === 'number') {
      const item = place.items[part]
      if (!item) break
      best = item.offset
      place = item
    } else break
  }
  return best
}
