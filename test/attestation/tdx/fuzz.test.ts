import { X509Certificate } from 'node:crypto'
import { expect } from '../../support/chai.js'
import { mutate, seededRandom } from '../../support/fuzz.js'
import { AttestationError } from '../../../src/lib/attestation/errors.js'
import { createTdxStandIn } from '../../../src/lib/cvm-standin/index.js'
import {
  parseTdReport,
  parseTdxCollateral,
  parseTdxQuote,
  verifyTdxQuote,
  type TdxCollateralFiles,
  type TdxPolicy,
} from '../../../src/lib/attestation/tdx/index.js'
import {
  AZURE_TD_REPORT,
  collateralOf,
  RECORDED_COLLATERAL,
  RECORDED_NOW,
  RECORDED_QUOTE,
  policyOf,
  INTEL_ROOT,
} from './helpers.js'

const ITERATIONS = 10_000
/** The length and type fields of a quote v4, where a wrong value must still be a clean refusal. */
const QUOTE_FIELDS = [0, 2, 4, 632, 764, 766, 1218, 1252, 1254]

/** support's mutations, plus a random 16- or 32-bit value written over a length or type field. */
function mutateStructure(input: Buffer, rnd: () => number, fields: readonly number[]): Buffer {
  if (rnd() < 0.6) return mutate(input, rnd)
  const out = Buffer.from(input)
  const at = fields[Math.floor(rnd() * fields.length)] ?? 0
  const value = rnd() < 0.5 ? Math.floor(rnd() * 16) : Math.floor(rnd() * 0x1_0000_0000)
  if (at + 4 <= out.length) out.writeUInt32LE(value >>> 0, at)
  return out
}

/** Runs fn on ITERATIONS mutations; anything but an AttestationError fails with the iteration to reproduce. */
function fuzz(
  seed: number,
  input: Buffer,
  fields: readonly number[],
  fn: (raw: Buffer) => unknown,
  iterations = ITERATIONS,
): number {
  const rnd = seededRandom(seed)
  let refused = 0
  for (let i = 0; i < iterations; i++) {
    const raw = mutateStructure(input, rnd, fields)
    try {
      fn(raw)
    } catch (err: unknown) {
      if (!(err instanceof AttestationError))
        expect.fail(
          `seed ${seed} iteration ${i}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
        )
      refused++
    }
  }
  return refused
}

describe('TDX parsers and verifier on mutated input', function () {
  // 10,000 signature checks and chain walks per case: ~15-50 s when two suites share the two
  // cores, and past 60 s once more load comes on top
  this.timeout(180_000)

  it(`parseTdxQuote: ${ITERATIONS} mutations of the recorded quote, only clean refusals`, () => {
    expect(fuzz(0x7d1, RECORDED_QUOTE, QUOTE_FIELDS, parseTdxQuote)).to.be.greaterThan(ITERATIONS / 2)
  })

  it(`parseTdReport: ${ITERATIONS} mutations of the Azure TD report, only clean refusals`, () => {
    expect(fuzz(0x7d2, AZURE_TD_REPORT, [0, 32, 80, 256, 512], parseTdReport)).to.be.greaterThan(
      ITERATIONS / 2,
    )
  })

  it(`verifyTdxQuote: ${ITERATIONS} mutations, half of the recorded quote, half of a stand-in's, only clean refusals`, async () => {
    const s = await createTdxStandIn()
    const reportData = Buffer.alloc(64, 1)
    const standInQuote = s.quote({ reportData })
    const standIn: TdxPolicy = {
      intelRoots: [new X509Certificate(s.rootPem)],
      reportData,
      minimum: { qeSvn: 0, pceSvn: 0, teeTcbSvn: Buffer.alloc(16) },
      collateral: collateralOf(s.collateral()),
    }
    const recorded = policyOf(RECORDED_QUOTE, [INTEL_ROOT], RECORDED_NOW)
    const refused =
      fuzz(0x7d3, RECORDED_QUOTE, QUOTE_FIELDS, (raw) => verifyTdxQuote(raw, recorded), ITERATIONS / 2) +
      fuzz(0x7d4, standInQuote, QUOTE_FIELDS, (raw) => verifyTdxQuote(raw, standIn), ITERATIONS / 2)
    // what still verifies differs from the original only outside the signed data (appended bytes)
    expect(refused).to.be.greaterThan(ITERATIONS / 2)
  })

  it(`parseTdxCollateral: ${ITERATIONS} mutations of the PCS responses, only clean refusals`, () => {
    const rnd = seededRandom(0x7d5)
    const keys = Object.keys(RECORDED_COLLATERAL) as (keyof TdxCollateralFiles)[]
    for (let i = 0; i < ITERATIONS; i++) {
      const key = keys[i % keys.length] as keyof TdxCollateralFiles
      const text = mutate(Buffer.from(RECORDED_COLLATERAL[key], 'utf8'), rnd).toString('utf8')
      try {
        parseTdxCollateral({ ...RECORDED_COLLATERAL, [key]: text })
      } catch (err: unknown) {
        if (!(err instanceof AttestationError))
          expect.fail(
            `iteration ${i} (${key}): ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
          )
      }
    }
  })
})
