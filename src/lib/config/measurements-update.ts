/**
 * Writing a trusted node's PCR values into constellation-conf.yaml. Only the `expected` values of
 * the PCRs the config already names change; every other byte of the file (comments, order,
 * quoting, warnOnly flags) stays as the operator wrote it. PCR 15 always stays zero.
 */
import { readFile, realpath, stat } from 'node:fs/promises'
import { isMap, isNode, isScalar, parseDocument, Scalar, type Document, type Node, type YAMLMap } from 'yaml'
import { CLUSTER_ID_PCR } from '../attestation/index.js'
import { CliError } from '../errors/index.js'
import { writeFileAtomic } from '../system/index.js'
import { renderTable } from '../ui/index.js'
import { configuredAttestation } from './attestation.js'
import { parseConfig, readConfigFile } from './load.js'
import { ATTESTATION_CONFIG_KEYS, type MeasurementsConfig } from './types.js'
import { validatorSettingsForConfig, type ValidatorSettings } from './validator.js'

/**
 * Where the config's variant keeps its measurements, attestation.<key>.measurements, read from the
 * YAML as written: the text may not be a valid config before the edit. Every section has them.
 */
function measurementsPath(doc: Document): readonly string[] {
  const key =
    Object.values(ATTESTATION_CONFIG_KEYS).find((k) => doc.hasIn(['attestation', k])) ??
    ATTESTATION_CONFIG_KEYS['qemu-vtpm']
  return ['attestation', key, 'measurements']
}

export interface MeasurementUpdate {
  index: number
  /** The config's expected value now; null: the config does not name this PCR (it is added). */
  current: string | null
  /** What the node reported, or the signed measurements say. */
  node: string
  /** What the config will expect. */
  next: string
  warnOnly: boolean
}

export interface ConfigMeasurements {
  file: string
  text: string
  measurements: MeasurementsConfig
  /** The pinned key for signed measurements as the config names it (PEM or a path from the config's directory). */
  measurementsPublicKey?: string
  /** How the node is attested: the config's variant and its settings (tpm-ek: its manufacturer roots). */
  attestation: Pick<ValidatorSettings, 'variant' | 'options'>
}

/** Reads and validates the config, keeping its text for a faithful edit. */
export async function readConfigMeasurements(file: string): Promise<ConfigMeasurements> {
  const text = await readConfigFile(file, 'config')
  const config = parseConfig(text, file)
  const { key } = configuredAttestation(config)
  const measurements = config.attestation[key]?.measurements
  if (!measurements) throw new CliError(`${file} has no attestation.${key}.measurements to fill in`)
  const { variant, options } = validatorSettingsForConfig(config)
  return {
    file,
    text,
    measurements,
    ...(config.measurementsPublicKey !== undefined && {
      measurementsPublicKey: config.measurementsPublicKey,
    }),
    attestation: { variant, options },
  }
}

/** One row per PCR the config names: its value now, the node's, and the one to write. */
export function planMeasurementsUpdate(
  current: MeasurementsConfig,
  pcrs: ReadonlyMap<number, Buffer>,
): MeasurementUpdate[] {
  return Object.entries(current)
    .map(([key, entry]) => ({ index: Number(key), entry }))
    .sort((a, b) => a.index - b.index)
    .map(({ index, entry }) => {
      const node = pcrs.get(index)?.toString('hex')
      if (node === undefined)
        throw new CliError(`the node did not report PCR ${index}, which the config names`)
      const next = index === CLUSTER_ID_PCR ? '00'.repeat(node.length / 2) : node
      return { index, current: entry.expected.toLowerCase(), node, next, warnOnly: entry.warnOnly }
    })
}

export const hasChanges = (updates: readonly MeasurementUpdate[]) => updates.some((u) => u.current !== u.next)

/**
 * Replaces each changed `expected` scalar in the source text at the position the YAML parser
 * reports, so nothing else in the file moves; the result is validated like any config.
 */
export function applyMeasurementsUpdate(
  text: string,
  file: string,
  updates: readonly MeasurementUpdate[],
): string {
  const doc = parseDocument(text, { uniqueKeys: true })
  const measurementsAt = measurementsPath(doc)
  const measurements = doc.getIn(measurementsAt, true)
  if (!isMap(measurements)) throw new CliError(`${file}: ${measurementsAt.join('.')} is not a map`)
  const edits: Array<{ from: number; to: number; value: string }> = []
  for (const update of updates.filter((u) => u.current === null))
    edits.push(insertion(text, measurements, update, file))
  for (const update of updates.filter((u) => u.current !== null && u.current !== u.next)) {
    const pair = measurements.items.find(
      (p) => isScalar(p.key) && String(p.key.value) === String(update.index),
    )
    const expected = isMap(pair?.value) ? pair.value.get('expected', true) : undefined
    if (!isScalar(expected) || !expected.range)
      throw new CliError(`${file}: ${measurementsAt.join('.')}.${update.index}.expected is not a plain value`)
    edits.push({ from: expected.range[0], to: expected.range[1], value: quoteLike(expected, update.next) })
  }
  let out = text
  // from the end backwards, so earlier offsets stay valid; insertions at one offset keep their order
  for (const e of edits.map((e, i) => ({ ...e, i })).sort((a, b) => b.from - a.from || b.i - a.i))
    out = out.slice(0, e.from) + e.value + out.slice(e.to)
  const written = configuredAttestation(parseConfig(out, file)).measurements
  for (const u of updates)
    if (written[String(u.index)]?.expected.toLowerCase() !== u.next)
      throw new Error(`editing ${file} left PCR ${u.index} at another value than ${u.next}`)
  return out
}

/**
 * A new PCR entry in the block map's own layout (indentation and key quoting copied from its first
 * entry), placed before the first entry with a higher index (ahead of that entry's comments).
 */
function insertion(
  text: string,
  measurements: YAMLMap<unknown, unknown>,
  update: MeasurementUpdate,
  file: string,
): { from: number; to: number; value: string } {
  const pairs = measurements.items.filter((p) => isScalar(p.key) && p.key.range)
  const first = pairs[0]
  const firstKey = first?.key
  if (measurements.flow || !isScalar(firstKey) || !firstKey.range)
    throw new CliError(`${file}: the measurements must be a block map to add PCR ${update.index}`, {
      hint: 'write them one PCR per entry, as `config generate` does',
    })
  const column = (offset: number) => offset - text.lastIndexOf('\n', offset - 1) - 1
  const indent = ' '.repeat(column(firstKey.range[0]))
  const innerKey = isMap(first?.value) && !first.value.flow ? first.value.items[0]?.key : undefined
  const step = isScalar(innerKey) && innerKey.range ? column(innerKey.range[0]) - indent.length : 2
  const inner = indent + ' '.repeat(Math.max(step, 1))
  const key =
    firstKey.type === Scalar.QUOTE_DOUBLE
      ? `"${update.index}"`
      : firstKey.type === Scalar.QUOTE_SINGLE
        ? `'${update.index}'`
        : String(update.index)
  const entry = `${indent}${key}:\n${inner}expected: "${update.next}"\n${inner}warnOnly: ${update.warnOnly}\n`
  const after = pairs.findIndex((p) => Number((p.key as Scalar).value) > update.index)
  const previous = after === -1 ? pairs[pairs.length - 1] : pairs[after - 1]
  const previousEnd = isNode(previous?.value) ? previous.value.range?.[2] : undefined
  const from =
    after === 0 || previousEnd === undefined
      ? text.lastIndexOf('\n', firstKey.range[0] - 1) + 1
      : endOfLine(text, previousEnd) // a flow entry's line may go on with a comment
  return { from, to: from, value: from > 0 && text[from - 1] !== '\n' ? `\n${entry}` : entry }
}

/** The offset after the line break that ends the line `offset` is on (or just ended). */
function endOfLine(text: string, offset: number): number {
  if (offset > 0 && text[offset - 1] === '\n') return offset
  const next = text.indexOf('\n', offset)
  return next === -1 ? text.length : next + 1
}

/** Keeps single quotes where the author used them; anything else becomes double-quoted (plain hex of digits would read as a number). */
function quoteLike(node: Scalar<unknown> & Node, hex: string): string {
  return node.type === Scalar.QUOTE_SINGLE ? `'${hex}'` : `"${hex}"`
}

/**
 * Replaces the config atomically (the link target, if it is a symlink), keeping its mode, and
 * refuses when the file changed since it was read: someone else's edit is never overwritten.
 */
export async function writeConfigMeasurements(
  config: ConfigMeasurements,
  text: string,
  during = 'the node was being attested',
): Promise<void> {
  const target = await realpath(config.file)
  const [now, info] = await Promise.all([readFile(target, 'utf8'), stat(target)])
  if (now !== config.text)
    throw new CliError(`${config.file} changed while ${during}`, {
      hint: 'rerun the command; nothing was written',
    })
  await writeFileAtomic(target, text, info.mode & 0o777)
}

/** Where the new values come from, for the table's heading and its source column. */
export interface MeasurementsSource {
  heading: string
  column: string
}

/** `config measurements -e`: a live node's values, trusted on first use. */
export const nodeSource = (endpoint: string): MeasurementsSource => ({
  heading:
    `PCR values of ${endpoint} (attested with a fresh nonce) beside the config's expected values. ` +
    'Trust on first use: nothing but your trust in this node vouches for its image',
  column: 'NODE',
})

/** The table and notes shown before asking; also the basis of the --json report. */
export function renderMeasurementsUpdate(
  source: MeasurementsSource,
  updates: readonly MeasurementUpdate[],
  notes: readonly string[] = measurementNotes(updates),
): string {
  const short = (hex: string | null) => (hex === null ? '(none)' : /^0+$/.test(hex) ? '0…0 (zero)' : hex)
  const rows = updates.map((u) => [
    String(u.index),
    short(u.current),
    short(u.node),
    u.warnOnly ? 'warn only' : 'enforced',
    u.current === null
      ? 'add'
      : u.current !== u.next
        ? 'update'
        : u.node !== u.next
          ? 'keep zero'
          : 'unchanged',
  ])
  const lines = [
    `${source.heading}:`,
    renderTable(['PCR', 'CONFIG', source.column, 'EXPECTATION', 'WRITE'], rows),
    '',
    ...notes,
  ]
  return lines.join('\n')
}

/** Why PCR 15 is not copied, said every time: copying it would trust only nodes of one cluster. */
export function measurementNotes(updates: readonly MeasurementUpdate[]): string[] {
  const pcr15 = updates.find((u) => u.index === CLUSTER_ID_PCR)
  if (!pcr15) return []
  const notes = [
    `PCR ${CLUSTER_ID_PCR} stays zero: a node extends it with its cluster ID when it is initialized or joins, ` +
      'so zero means "never initialized", which init and join require; `constellation verify` checks ' +
      'an initialized node against the cluster ID from the state instead.',
  ]
  if (!/^0+$/.test(pcr15.node))
    notes.push(
      `This node's PCR ${CLUSTER_ID_PCR} is not zero: it was initialized once. Its other PCRs still describe its image.`,
    )
  return notes
}
