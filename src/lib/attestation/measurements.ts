/** Expected PCR values and the comparison semantics of Constellation's measurements (enforce / warnOnly). */
import { createHash } from 'node:crypto'

export type Measurements = Map<number, { expected: Buffer; warnOnly: boolean }>

/** One expected PCR value as config files write it. */
export interface MeasurementEntry {
  /** Hex, 32 bytes for vTPM variants. */
  expected: string
  warnOnly: boolean
}
/** Measurements as config files write them: PCR index → entry. */
export type MeasurementsConfig = Record<string, MeasurementEntry>

export const CLUSTER_ID_PCR = 15

export function measurementsFromConfig(m: MeasurementsConfig): Measurements {
  const out: Measurements = new Map()
  for (const [index, entry] of Object.entries(m)) {
    out.set(Number(index), { expected: Buffer.from(entry.expected, 'hex'), warnOnly: entry.warnOnly })
  }
  return out
}

/** SHA256(0^32 ‖ SHA256(clusterId)): PCR 15 after the node extended it once with SHA256(clusterId). */
export function clusterIdPcrValue(clusterId: Buffer): Buffer {
  const digest = createHash('sha256').update(clusterId).digest()
  return createHash('sha256').update(Buffer.alloc(32)).update(digest).digest()
}

export interface Comparison {
  /** Enforced mismatches: any one refuses the attestation. */
  errors: string[]
  /** Warn-only mismatches, prefixed "Encountered". */
  warnings: string[]
}

/** Compares in ascending index order; PCRs the expectation does not name are ignored. */
export function compareMeasurements(expected: Measurements, actual: ReadonlyMap<number, Buffer>): Comparison {
  const errors: string[] = []
  const warnings: string[] = []
  for (const index of [...expected.keys()].sort((a, b) => a - b)) {
    const want = expected.get(index)
    if (!want) continue
    const got = actual.get(index)
    let problem: string | undefined
    if (got === undefined) problem = `missing measurement value for index ${index}`
    else if (!got.equals(want.expected))
      problem = `untrusted measurement value ${got.toString('hex')} at index ${index}`
    if (problem === undefined) continue
    if (want.warnOnly) warnings.push(`Encountered ${problem}`)
    else errors.push(problem)
  }
  return { errors, warnings }
}
