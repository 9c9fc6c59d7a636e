/**
 * Constellation's image measurements JSON, in either of its shapes: one variant's entry
 * (`csp`, `attestationVariant`, `image`, `measurements`), or the v2 envelope its image pipeline
 * publishes (`version`, `ref`, `stream`, `list` of `csp`/`attestationVariant`/`measurements`).
 * Each measurement is `{"expected": hex of 32 or 48 bytes, "warnOnly": bool}` under its PCR index.
 */
import { MeasurementsRefusedError } from './refusal.js'

export interface ReferenceMeasurement {
  expected: string
  warnOnly: boolean
}

export interface MeasurementsEntry {
  csp: string
  attestationVariant: string
  /** PCR index → value, indices in ascending order. */
  measurements: Map<number, ReferenceMeasurement>
}

export interface MeasurementsDocument {
  /** The image these values describe (the envelope's ref/stream/version). */
  image: string
  entries: MeasurementsEntry[]
}

const MAX_PCR = 23
const MAX_ENTRIES = 64

/** Parses and checks the whole document; `source` (a file or URL) names it in every error. */
export function parseMeasurementsDocument(bytes: Buffer, source: string): MeasurementsDocument {
  let value: unknown
  try {
    value = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    throw refuse(source, `is not JSON: ${(err as Error).message}`)
  }
  if (!isRecord(value)) throw refuse(source, 'is not a JSON object')
  if ('list' in value) return parseEnvelope(value, source)
  const image = text(value, 'image', source, '')
  return { image, entries: [parseEntry(value, source, '')] }
}

function parseEnvelope(value: Record<string, unknown>, source: string): MeasurementsDocument {
  const version = text(value, 'version', source, '')
  const ref = text(value, 'ref', source, '')
  const stream = text(value, 'stream', source, '')
  const list = value.list
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_ENTRIES)
    throw refuse(source, `list must be an array of 1 to ${MAX_ENTRIES} entries`)
  const image = ref === '-' && stream === 'stable' ? version : `ref/${ref}/stream/${stream}/${version}`
  return {
    image,
    entries: list.map((entry: unknown, i) => {
      if (!isRecord(entry)) throw refuse(source, `list[${i}] is not an object`)
      return parseEntry(entry, source, `list[${i}].`)
    }),
  }
}

function parseEntry(value: Record<string, unknown>, source: string, at: string): MeasurementsEntry {
  const csp = text(value, 'csp', source, at)
  const attestationVariant = text(value, 'attestationVariant', source, at)
  const raw = value.measurements
  if (!isRecord(raw) || Object.keys(raw).length === 0)
    throw refuse(source, `${at}measurements must be a non-empty object of PCR index to value`)
  const measurements = new Map<number, ReferenceMeasurement>()
  for (const [key, m] of Object.entries(raw)) {
    const where = `${at}measurements.${key}`
    if (!/^(0|[1-9]\d?)$/.test(key) || Number(key) > MAX_PCR)
      throw refuse(source, `${where}: ${JSON.stringify(key)} is not a PCR index (0-${MAX_PCR})`)
    if (!isRecord(m)) throw refuse(source, `${where} must be {"expected": hex, "warnOnly": bool}`)
    const { expected, warnOnly } = m
    if (typeof expected !== 'string' || !/^([0-9a-fA-F]{64}|[0-9a-fA-F]{96})$/.test(expected))
      throw refuse(source, `${where}.expected must be 32 or 48 bytes as hex`)
    if (typeof warnOnly !== 'boolean') throw refuse(source, `${where}.warnOnly must be true or false`)
    measurements.set(Number(key), { expected: expected.toLowerCase(), warnOnly })
  }
  return { csp, attestationVariant, measurements: new Map([...measurements].sort((a, b) => a[0] - b[0])) }
}

/** The entry for a workspace's variant; refused with the reason `variant` when there is none. */
export function entryForVariant(
  doc: MeasurementsDocument,
  variant: string,
  source: string,
): MeasurementsEntry {
  const entry = doc.entries.find((e) => e.attestationVariant === variant)
  if (entry) return entry
  const named = doc.entries.map((e) => e.attestationVariant).join(', ')
  throw new MeasurementsRefusedError(
    'variant',
    `${source} has measurements for ${named}, not for this workspace's variant ${variant}`,
    "nothing was written; fetch the measurements of an image built for this workspace's variant",
  )
}

function text(value: Record<string, unknown>, key: string, source: string, at: string): string {
  const v = value[key]
  if (typeof v !== 'string' || v.length === 0 || v.length > 256)
    throw refuse(source, `${at}${key} must be a non-empty string`)
  return v
}

const refuse = (source: string, why: string) =>
  new MeasurementsRefusedError(
    'document',
    `${source} is not Constellation's measurements JSON: ${why}`,
    'expected {"csp", "attestationVariant", "image", "measurements": {"4": {"expected": "<hex>", "warnOnly": false}, …}}',
  )

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
