import { expect } from '../support/chai.js'
import { encodeJoinConfig, parseJoinConfig } from '../../src/lib/attestation/index.js'

const hex = (byte: number) => Buffer.alloc(32, byte).toString('hex')
const ZERO = hex(0)
const doc = (measurements: unknown) => JSON.stringify({ measurements })

describe('join-config', () => {
  it('reads enforced and warn-only measurements, sorted, warnOnly defaulting to false', () => {
    const m = parseJoinConfig(
      doc({
        '9': { expected: hex(9).toUpperCase() },
        '4': { expected: hex(4), warnOnly: true },
        '15': { expected: ZERO },
      }),
    )
    expect([...m.keys()]).to.deep.equal([4, 9, 15])
    expect(m.get(4)).to.deep.equal({ expected: Buffer.alloc(32, 4), warnOnly: true })
    expect(m.get(9)).to.deep.equal({ expected: Buffer.alloc(32, 9), warnOnly: false })
  })

  it('adds PCR 15 as enforced zero when the operator left it out', () => {
    const m = parseJoinConfig(doc({ '4': { expected: hex(4) } }))
    expect(m.get(15)).to.deep.equal({ expected: Buffer.alloc(32), warnOnly: false })
  })

  it('round-trips through its encoding', () => {
    const m = parseJoinConfig(doc({ '4': { expected: hex(4), warnOnly: true }, '11': { expected: hex(11) } }))
    expect(parseJoinConfig(encodeJoinConfig(m))).to.deep.equal(m)
  })

  const refused: Record<string, { text: string; want: RegExp }> = {
    'text that is not JSON': { text: '{"measurements": {', want: /^not JSON: / },
    'a JSON array': { text: '[]', want: /want a JSON object with "measurements"/ },
    'an unknown top-level key': {
      text: JSON.stringify({ measurements: {}, salt: 'x' }),
      want: /^salt: unknown key/,
    },
    'no measurements': { text: '{}', want: /^measurements: want an object/ },
    'an empty set (would trust any node)': {
      text: doc({}),
      want: /^measurements: empty; refusing to trust any node/,
    },
    'a PCR index out of range': {
      text: doc({ '24': { expected: hex(1) } }),
      want: /^measurements\.24: not a PCR index/,
    },
    'a PCR index that is not a number': {
      text: doc({ four: { expected: hex(1) } }),
      want: /^measurements\.four: not a PCR index/,
    },
    'a legacy plain-string entry': {
      text: doc({ '4': hex(4) }),
      want: /^measurements\.4: want \{"expected"/,
    },
    'expected not hex': {
      text: doc({ '4': { expected: 'zz'.repeat(32) } }),
      want: /^measurements\.4\.expected: want 32 bytes/,
    },
    'expected of 48 bytes (TDX, not this variant)': {
      text: doc({ '4': { expected: 'ab'.repeat(48) } }),
      want: /^measurements\.4\.expected: want 32 bytes as 64 hex digits/,
    },
    'warnOnly not a boolean': {
      text: doc({ '4': { expected: hex(4), warnOnly: 'yes' } }),
      want: /^measurements\.4\.warnOnly: want true or false/,
    },
    'an unknown entry key': {
      text: doc({ '4': { expected: hex(4), validationOpt: true } }),
      want: /^measurements\.4\.validationOpt: unknown key/,
    },
    'PCR 15 warn-only': {
      text: doc({ '15': { expected: ZERO, warnOnly: true } }),
      want: /^measurements\.15: must be enforced as 32 zero bytes/,
    },
    'PCR 15 not zero (would admit bootstrapped nodes)': {
      text: doc({ '15': { expected: hex(1) } }),
      want: /^measurements\.15: must be enforced as 32 zero bytes/,
    },
  }
  for (const [name, tc] of Object.entries(refused))
    it(`refuses ${name}`, () => {
      expect(() => parseJoinConfig(tc.text)).to.throw(tc.want)
    })
})
