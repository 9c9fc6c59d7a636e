/**
 * The join direction's challenges (ChallengeRegistry) on their own: single use, expiry, forgery, and
 * what a flood of challenge calls, which need no attestation, can and cannot do to a genuine node's.
 */
import { randomBytes } from 'node:crypto'
import type { ActivationExpectation } from '../../src/lib/attestation/index.js'
import { ChallengeRegistry } from '../../src/lib/atls/index.js'
import { expect } from '../support/chai.js'

const GENUINE = '10.0.0.5'
const FLOODER = '10.0.0.66'
const expectation = (): ActivationExpectation => ({ secret: randomBytes(32), akName: randomBytes(34) })
const flip = (b: Buffer, at: number) => Buffer.from(b.map((x, i) => (i === at ? x ^ 1 : x)))

describe('ChallengeRegistry: single-use nonces the join service chose', () => {
  let now: number
  let registry: ChallengeRegistry
  beforeEach(() => {
    now = 1_700_000_000_000
    registry = new ChallengeRegistry(() => now, { activationsPerPeer: 4, activations: 8 })
  })

  const refusedCases: Record<string, (nonce: Buffer) => Buffer> = {
    'used once already (a replay)': (n) => (registry.consume(n), n),
    'expired (older than 60 s)': (n) => ((now += 60_001), n),
    'never issued by this server': () => randomBytes(32),
    'issued by another join service': () => new ChallengeRegistry(() => now).issue(),
    'a bit flipped in its expiry': (n) => flip(n, 2),
    'a bit flipped in its random part': (n) => flip(n, 10),
    'a bit flipped in its tag': (n) => flip(n, 31),
    'cut short': (n) => n.subarray(0, 31),
  }
  for (const [name, tamper] of Object.entries(refusedCases))
    it(`refuses a nonce ${name}`, () => {
      const nonce = tamper(registry.issue())
      expect(registry.open(nonce)).to.equal(undefined)
      expect(registry.consume(nonce)).to.equal(false)
    })

  it('opens an issued nonce until it is spent, then never again', () => {
    const nonce = registry.issue()
    expect(registry.open(nonce)).to.deep.equal({ expected: undefined })
    expect(registry.open(nonce), 'opening is not spending').to.deep.equal({ expected: undefined })
    registry.spend(nonce)
    expect(registry.open(nonce)).to.equal(undefined)
    expect(() => registry.spend(nonce)).to.throw(/already used \(replay\)/)
  })

  it('each nonce is fresh: 32 bytes, never twice the same', () => {
    const nonces = new Set(Array.from({ length: 1_000 }, () => registry.issue().toString('hex')))
    expect(nonces.size).to.equal(1_000)
    for (const n of nonces) expect(n).to.have.length(64)
  })

  it("a genuine node's challenge survives 20,000 challenges issued to another peer", () => {
    const genuine = registry.issue(undefined, GENUINE)
    for (let i = 0; i < 20_000; i++) registry.issue(undefined, FLOODER)
    expect(registry.consume(genuine)).to.equal(true)
  })

  it("a genuine node's challenge survives 20,000 challenges issued without naming a peer", () => {
    const genuine = registry.issue()
    for (let i = 0; i < 20_000; i++) registry.issue()
    expect(registry.consume(genuine)).to.equal(true)
  })

  describe('tpm-ek: the activation expected with a nonce', () => {
    it('comes back with its nonce, until the nonce is spent', () => {
      const want = expectation()
      const nonce = registry.issue(want, GENUINE)
      expect(registry.open(nonce)?.expected).to.deep.equal(want)
      registry.spend(nonce)
      expect(registry.open(nonce)).to.equal(undefined)
    })

    const capCases: Record<string, { peers: string[]; wantRefused: number }> = {
      'a peer at its cap is refused its next one': { peers: Array<string>(5).fill(FLOODER), wantRefused: 1 },
      'other peers still get theirs while one is at its cap': {
        peers: [...Array<string>(6).fill(FLOODER), GENUINE, '10.0.0.7'],
        wantRefused: 2,
      },
      'all peers together are refused beyond the total, nobody is evicted': {
        peers: ['a', 'a', 'b', 'b', 'c', 'c', 'd', 'd', 'e'],
        wantRefused: 1,
      },
    }
    for (const [name, tc] of Object.entries(capCases))
      it(name, () => {
        const issued: Buffer[] = []
        let refused = 0
        for (const peer of tc.peers)
          try {
            issued.push(registry.issue(expectation(), peer))
          } catch (err) {
            expect(String(err)).to.match(/open tpm-ek challenges/)
            refused++
          }
        expect(refused).to.equal(tc.wantRefused)
        for (const nonce of issued) expect(registry.open(nonce)?.expected, 'kept').to.not.equal(undefined)
      })

    it("a genuine node's survives 20,000 asked by another peer, and its peer may ask again once it is spent", () => {
      const genuine = registry.issue(expectation(), GENUINE)
      let refused = 0
      for (let i = 0; i < 20_000; i++)
        try {
          registry.issue(expectation(), FLOODER)
        } catch {
          refused++
        }
      expect(refused).to.equal(20_000 - 4)
      expect(registry.open(genuine)?.expected).to.not.equal(undefined)
      registry.spend(genuine)
      expect(() => registry.issue(expectation(), GENUINE)).to.not.throw()
    })

    it('expired ones free their peer', () => {
      for (let i = 0; i < 4; i++) registry.issue(expectation(), FLOODER)
      expect(() => registry.issue(expectation(), FLOODER)).to.throw(/open tpm-ek challenges/)
      now += 60_001
      expect(() => registry.issue(expectation(), FLOODER)).to.not.throw()
    })
  })
})
