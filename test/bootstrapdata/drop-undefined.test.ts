import { expect } from '../support/chai.js'
import { dropEmpty, dropUndefined } from '../../src/lib/bootstrapdata/drop-undefined.js'

describe('dropping unset fields', () => {
  const cases: Record<string, { input: Record<string, unknown>; undef: object; empty: object }> = {
    'undefined goes in both': { input: { a: 1, b: undefined }, undef: { a: 1 }, empty: { a: 1 } },
    '"" goes only with dropEmpty': { input: { a: '', b: 'x' }, undef: { a: '', b: 'x' }, empty: { b: 'x' } },
    'null, 0, false and [] stay': {
      input: { n: null, z: 0, f: false, l: [] },
      undef: { n: null, z: 0, f: false, l: [] },
      empty: { n: null, z: 0, f: false, l: [] },
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      expect(dropUndefined(tc.input)).to.deep.equal(tc.undef)
      expect(dropEmpty(tc.input)).to.deep.equal(tc.empty)
    })
  }
})
