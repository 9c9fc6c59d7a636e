import { expect } from '../support/chai.js'
import {
  checkInitSecret,
  generateInitSecret,
  hashInitSecret,
  INIT_SECRET_LENGTH,
} from '../../src/lib/kms/index.js'

describe('init secret', () => {
  it('is 32 printable ASCII characters, different each time', () => {
    const a = generateInitSecret()
    expect(a).to.have.length(INIT_SECRET_LENGTH)
    expect(a.toString('latin1')).to.match(/^[A-Za-z0-9]{32}$/)
    expect(generateInitSecret().equals(a)).to.equal(false)
  })

  it('uses every letter of its alphabet (no modulo bias: the picker is asked for 62)', () => {
    const asked: number[] = []
    generateInitSecret((max) => (asked.push(max), 61))
    expect(new Set(asked)).to.deep.equal(new Set([62]))
  })

  it('hashes so that the node accepts exactly this secret', async () => {
    const secret = generateInitSecret()
    const hash = await hashInitSecret(secret, 4)
    expect(hash).to.match(/^\$2[aby]\$04\$/)
    expect(await checkInitSecret(secret, hash)).to.equal(true)
    const other = Buffer.from(secret)
    other[0] = other[0] === 0x41 ? 0x42 : 0x41
    expect(await checkInitSecret(other, hash)).to.equal(false)
  })
})
