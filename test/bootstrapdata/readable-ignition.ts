/**
 * A reviewable view of an Ignition config for golden files: pretty JSON in which every `data:`
 * URL source and every unit body is shown as its decoded text, one line per array item. The view
 * is lossless: `compactIgnition(readableIgnition(doc)) === doc`, byte for byte, so a golden stored
 * this way still pins the exact generated document.
 */

/** A decoded body: `dataUrl` says how the source was encoded (absent for a plain unit body). */
interface ReadableText {
  dataUrl?: 'percent' | 'base64'
  text: string[]
}

const PERCENT = 'data:,'
const BASE64 = 'data:;base64,'

export function readableIgnition(compact: string): string {
  if (!compact.endsWith('\n')) throw new Error('an Ignition document ends in one newline')
  return `${JSON.stringify(mapValues(JSON.parse(compact) as unknown, toReadable), null, 2)}\n`
}

export function compactIgnition(readable: string): string {
  return `${JSON.stringify(mapValues(JSON.parse(readable) as unknown, toCompact))}\n`
}

type Mapper = (key: string, value: unknown) => unknown

/** Applies `map` to every object property, depth first; key order is kept. */
function mapValues(value: unknown, map: Mapper): unknown {
  if (Array.isArray(value)) return value.map((v) => mapValues(v, map))
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, map(k, mapValues(v, map))]))
}

function toReadable(key: string, value: unknown): unknown {
  if (typeof value !== 'string') return value
  if (key === 'contents') return { text: value.split('\n') } satisfies ReadableText
  if (key !== 'source') return value
  if (value.startsWith(PERCENT)) {
    return { dataUrl: 'percent', text: decodeURIComponent(value.slice(PERCENT.length)).split('\n') }
  }
  if (value.startsWith(BASE64)) {
    const bytes = Buffer.from(value.slice(BASE64.length), 'base64')
    const text = bytes.toString('utf8')
    // Bytes that are not UTF-8 text stay encoded: decoding them would lose information.
    if (!Buffer.from(text).equals(bytes)) return value
    return { dataUrl: 'base64', text: text.split('\n') } satisfies ReadableText
  }
  return value
}

function toCompact(key: string, value: unknown): unknown {
  if ((key !== 'contents' && key !== 'source') || !isReadableText(value)) return value
  const text = value.text.join('\n')
  if (value.dataUrl === 'percent') return `${PERCENT}${encodeURIComponent(text)}`
  if (value.dataUrl === 'base64') return `${BASE64}${Buffer.from(text).toString('base64')}`
  return text
}

function isReadableText(value: unknown): value is ReadableText {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { text?: unknown }).text) &&
    (value as { text: unknown[] }).text.every((l) => typeof l === 'string')
  )
}
