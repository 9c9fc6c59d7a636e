import { createHash } from 'node:crypto'
import { expect } from '../support/chai.js'
import { startSwtpm } from '../support/swtpm.js'
import { mutate, seededRandom } from '../support/fuzz.js'
import {
  parsePublic,
  parseQuoteAttest,
  parseSignature,
  quote,
  TpmParseError,
  withAttestationKey,
  withTpm,
} from '../../src/lib/tpm/index.js'
import { publicKeyOf } from '../../src/lib/tpm/structures.js'

describe('TPM structure parsers on hostile input', () => {
  it('10,000 mutated or random TPMS_ATTEST / TPMT_SIGNATURE / TPMT_PUBLIC give TpmParseError or a value, never a crash', async () => {
    const tpm = await startSwtpm()
    const real = await withTpm(tpm.open, (t) =>
      withAttestationKey(t, async (ak) => ({
        ak: ak.publicArea,
        q: await quote(t, ak.handle, createHash('sha256').digest(), [0, 1]),
      })),
    ).finally(() => tpm.stop())
    const parsers: Array<[Buffer, (b: Buffer) => unknown]> = [
      [real.q.quoted, parseQuoteAttest],
      [real.q.signature, parseSignature],
      [real.ak, (b) => publicKeyOf(parsePublic(b))],
    ]
    const rnd = seededRandom(0xc0ffee)
    let refused = 0
    for (let i = 0; i < 10_000; i++) {
      const [seed, parse] = parsers[i % parsers.length]!
      const input = mutate(seed, rnd)
      try {
        parse(input)
      } catch (err: unknown) {
        if (!(err instanceof TpmParseError))
          throw new Error(`iteration ${i}: unexpected ${String(err)}`, { cause: err })
        refused++
      }
    }
    expect(refused).to.be.greaterThan(5_000)
  })
})
