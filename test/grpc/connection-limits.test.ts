/** Counting connections per peer address and in all (ConnectionLimiter), and naming the peer. */
import { ConnectionLimiter, peerAddress } from '../../src/lib/grpc/index.js'
import { type ConnectionRefusal } from '../../src/lib/grpc/connection-limits.js'
import { expect } from '../support/chai.js'

type Step = string // 'a' opens a connection from a, '-a' closes one of a's

const cases: Record<string, { perPeer: number; total: number; steps: Step[]; want: string[] }> = {
  'admits up to the per-peer cap from one address, refuses the next': {
    perPeer: 3,
    total: 100,
    steps: ['a', 'a', 'a', 'a'],
    want: ['ok', 'ok', 'ok', 'peer'],
  },
  'another address still connects while one is at its cap': {
    perPeer: 3,
    total: 100,
    steps: ['a', 'a', 'a', 'a', 'b'],
    want: ['ok', 'ok', 'ok', 'peer', 'ok'],
  },
  'a closed connection frees its slot; a refused one never took one': {
    perPeer: 2,
    total: 100,
    steps: ['a', 'a', 'a', '-a', 'a', 'a'],
    want: ['ok', 'ok', 'peer', 'ok', 'peer'],
  },
  'the total counts every address': {
    perPeer: 2,
    total: 4,
    steps: ['a', 'a', 'b', 'b', 'c', '-b', 'c'],
    want: ['ok', 'ok', 'ok', 'ok', 'total', 'ok'],
  },
}

describe('ConnectionLimiter', () => {
  for (const [name, tc] of Object.entries(cases))
    it(name, () => {
      const limiter = new ConnectionLimiter({ perPeer: tc.perPeer, total: tc.total })
      const got: string[] = []
      for (const step of tc.steps)
        if (step.startsWith('-')) limiter.close(step.slice(1))
        else got.push(limiter.open(step))
      expect(got).to.deep.equal(tc.want)
    })

  it('reports refusals at powers of two, so a flood costs a few log lines', () => {
    const reported: ConnectionRefusal[] = []
    const limiter = new ConnectionLimiter({ perPeer: 1, total: 100 }, (r) => reported.push(r))
    limiter.open('a')
    for (let i = 0; i < 1_000; i++) limiter.open('a')
    expect(reported.map((r) => r.refused)).to.deep.equal([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    expect(reported[0]).to.deep.include({ address: 'a', limit: 'peer', open: 1 })
  })

  it('forgets an address once it holds no connection', () => {
    const limiter = new ConnectionLimiter({ perPeer: 1, total: 100 })
    for (let i = 0; i < 10_000; i++) {
      limiter.open(`10.0.${i >> 8}.${i & 255}`)
      limiter.close(`10.0.${i >> 8}.${i & 255}`)
    }
    expect(limiter.peers).to.equal(0)
  })

  const peers: Record<string, string> = {
    '10.0.0.5:4711': '10.0.0.5',
    '[::1]:4711': '::1',
    '[::ffff:127.0.0.2]:4711': '127.0.0.2',
    '[2001:db8::1]:9999': '2001:db8::1',
  }
  for (const [peer, want] of Object.entries(peers))
    it(`the peer ${peer} is the address ${want}`, () => expect(peerAddress(peer)).to.equal(want))
})
