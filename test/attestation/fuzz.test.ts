import { randomBytes } from 'node:crypto'
import { startSwtpm } from '../support/swtpm.js'
import { mutate, seededRandom } from '../support/fuzz.js'
import { parsePublic, readPcrs } from '../../src/lib/tpm/index.js'
import { AttestationError, createIssuer, createValidator } from '../../src/lib/attestation/index.js'
import { publicKeyOf } from '../../src/lib/tpm/structures.js'
import { decodeDocument, encodeDocument } from '../../src/lib/attestation/document.js'

const sameKey = (a: Buffer, b: Buffer) => {
  const jwk = (x: Buffer) => JSON.stringify(publicKeyOf(parsePublic(x)).export({ format: 'jwk' }))
  return jwk(a) === jwk(b)
}

describe('attestation validator on hostile documents', () => {
  it('10,000 mutated or random documents are refused with AttestationError, never a crash or a pass', async () => {
    const tpm = await startSwtpm()
    const nonce = randomBytes(32)
    const userData = randomBytes(32)
    const [doc, pcrs] = await Promise.all([
      createIssuer('qemu-vtpm', tpm.open).issue(userData, nonce),
      readPcrs(tpm.open, [4, 15]),
    ]).finally(() => tpm.stop())
    const validator = createValidator(
      'qemu-vtpm',
      new Map([...pcrs].map(([i, v]) => [i, { expected: v, warnOnly: false }])),
    )
    const parsed = decodeDocument(doc)
    const rnd = seededRandom(42)
    const fields = ['akPub', 'quote', 'rawSig', 'userData', 'pcr'] as const
    const sameEvidence = (b: Buffer) => {
      const d = decodeDocument(b)
      const q = d.quotes.find((x) => x.hashAlg === 11)!
      const o = parsed.quotes[0]!
      return (
        sameKey(d.akPub, parsed.akPub) &&
        d.userData.equals(parsed.userData) &&
        q.quote.equals(o.quote) &&
        q.rawSig.equals(o.rawSig) &&
        [...o.pcrs].every(([k, v]) => q.pcrs.get(k)?.equals(v))
      )
    }
    for (let i = 0; i < 10_000; i++) {
      let input: Buffer
      if (i % 2 === 0) {
        input = mutate(doc, rnd)
      } else {
        const q = parsed.quotes[0]!
        const field = fields[Math.floor(rnd() * fields.length)]!
        const pcrs = new Map(q.pcrs)
        const copy = { ...parsed, quotes: [{ ...q, pcrs }] }
        if (field === 'akPub') copy.akPub = mutate(parsed.akPub, rnd)
        else if (field === 'userData') copy.userData = mutate(parsed.userData, rnd)
        else if (field === 'quote') copy.quotes[0]!.quote = mutate(q.quote, rnd)
        else if (field === 'rawSig') copy.quotes[0]!.rawSig = mutate(q.rawSig, rnd)
        else pcrs.set(Math.floor(rnd() * 24), mutate(q.pcrs.get(0)!, rnd))
        input = encodeDocument(copy)
      }
      const accepted = await validator.validate(input, nonce).then(
        () => true,
        (err: unknown) => {
          if (err instanceof AttestationError) return false
          throw new Error(`iteration ${i}: unexpected ${String(err)}`, { cause: err })
        },
      )
      // only edits outside the evidence (e.g. an unknown key's name) may pass
      if (accepted && !sameEvidence(input))
        throw new Error(`iteration ${i}: a changed document was accepted: ${input.toString()}`)
    }
  })
})
