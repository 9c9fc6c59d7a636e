/**
 * The cluster's `join-config`: the measurements the operator sent at init (InitRequest field 100)
 * or later, which every join service enforces on joining nodes. Stored on a control plane as JSON:
 *
 *   {"measurements": {"4": {"expected": "<64 hex digits>", "warnOnly": false}, ...}}
 *
 * PCR 15 is always enforced as zero whatever the file says, or the file is refused: a node that
 * bootstrapped once (PCR 15 extended with a cluster ID) must never get a join ticket again.
 */
import { CLUSTER_ID_PCR, type Measurements } from './measurements.js'

/** Where the cluster keeps it: every join service mirrors this ConfigMap into its local file. */
export const JOIN_CONFIG_MAP = {
  namespace: 'kube-system',
  name: 'join-config',
  key: 'join-config.json',
} as const

const PCR_INDEX = /^(?:[0-9]|1[0-9]|2[0-3])$/
const EXPECTED_HEX = /^[0-9a-fA-F]{64}$/
const ENTRY_KEYS = new Set(['expected', 'warnOnly'])

/** What is wrong with a join-config, naming the key (`measurements.4.expected`). */
export class JoinConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'JoinConfigError'
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

export function parseJoinConfig(text: string): Measurements {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new JoinConfigError(`not JSON: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (!isObject(doc)) throw new JoinConfigError('want a JSON object with "measurements"')
  for (const key of Object.keys(doc))
    if (key !== 'measurements') throw new JoinConfigError(`${key}: unknown key`)
  const raw = doc.measurements
  if (!isObject(raw)) throw new JoinConfigError('measurements: want an object of PCR index to measurement')
  // an empty set would trust any node
  if (Object.keys(raw).length === 0)
    throw new JoinConfigError('measurements: empty; refusing to trust any node')
  const out: Measurements = new Map()
  for (const [index, entry] of Object.entries(raw)) out.set(Number(index), parseEntry(index, entry))
  enforceClusterIdPcr(out)
  return new Map([...out].sort(([a], [b]) => a - b))
}

function parseEntry(index: string, entry: unknown): { expected: Buffer; warnOnly: boolean } {
  const at = `measurements.${index}`
  if (!PCR_INDEX.test(index)) throw new JoinConfigError(`${at}: not a PCR index (0-23)`)
  if (!isObject(entry)) throw new JoinConfigError(`${at}: want {"expected": hex, "warnOnly": bool}`)
  for (const key of Object.keys(entry))
    if (!ENTRY_KEYS.has(key)) throw new JoinConfigError(`${at}.${key}: unknown key`)
  if (typeof entry.expected !== 'string' || !EXPECTED_HEX.test(entry.expected))
    throw new JoinConfigError(`${at}.expected: want 32 bytes as 64 hex digits`)
  if (entry.warnOnly !== undefined && typeof entry.warnOnly !== 'boolean')
    throw new JoinConfigError(`${at}.warnOnly: want true or false`)
  return { expected: Buffer.from(entry.expected, 'hex'), warnOnly: entry.warnOnly ?? false }
}

function enforceClusterIdPcr(m: Measurements): void {
  const entry = m.get(CLUSTER_ID_PCR)
  if (entry === undefined) {
    m.set(CLUSTER_ID_PCR, { expected: Buffer.alloc(32), warnOnly: false })
    return
  }
  if (entry.warnOnly || !entry.expected.equals(Buffer.alloc(32)))
    throw new JoinConfigError(
      `measurements.${CLUSTER_ID_PCR}: must be enforced as 32 zero bytes, so that a node bootstrapped once can never join again`,
    )
}

/** The operator's measurements as joining nodes must meet them: PCR 15 enforced as zero, whatever the set said. */
export function measurementsForJoins(m: Measurements): Measurements {
  return new Map([...m, [CLUSTER_ID_PCR, { expected: Buffer.alloc(32), warnOnly: false }]])
}

/** The file as a node writes it; parseJoinConfig reads it back to the same set. */
export function encodeJoinConfig(m: Measurements): string {
  const measurements = Object.fromEntries(
    [...m]
      .sort(([a], [b]) => a - b)
      .map(([i, e]) => [String(i), { expected: e.expected.toString('hex'), warnOnly: e.warnOnly }]),
  )
  return JSON.stringify({ measurements }, null, 2) + '\n'
}
