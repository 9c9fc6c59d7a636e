/**
 * Which recovery requests a rebooted node takes into its queue (RecoveryAdmission): a small queue,
 * one waiting request per address, and a backoff per address after each wrong master secret.
 */
import { RecoveryAdmission, type RecoveryLimits } from '../../src/lib/statedisk/recovery-admission.js'
import { findMark, STATE_DISK_TOKEN_TYPE } from '../../src/lib/statedisk/mark.js'
import { expect } from '../support/chai.js'

const LIMITS: Required<RecoveryLimits> = {
  queued: 3,
  queuedPerPeer: 1,
  backoffInitialMs: 1_000,
  backoffMaxMs: 8_000,
  trackedPeers: 4,
}

/** `a` asks, `-a` leaves the queue (answered), `!a` leaves it refused (a wrong secret), `+5000` lets time pass. */
const cases: Record<string, { steps: string[]; want: string[] }> = {
  'the queue takes three, refuses the fourth, and takes one again once one left': {
    steps: ['a', 'b', 'c', 'd', '-a', 'd'],
    want: ['ok', 'ok', 'ok', 'busy 1000', 'ok'],
  },
  'one waiting request per address; another address still gets in': {
    steps: ['a', 'a', 'b', '-a', 'a'],
    want: ['ok', 'peer 1000', 'ok', 'ok'],
  },
  'a wrong secret makes its address wait, doubling each time up to the cap': {
    steps: [
      'a',
      '!a',
      'a',
      '+1000',
      'a',
      '!a',
      'a',
      '+2000',
      'a',
      '!a',
      'a',
      '+4000',
      'a',
      '!a',
      'a',
      '+8000',
      'a',
      '!a',
      'a',
    ],
    want: [
      'ok',
      'backoff 1000',
      'ok',
      'backoff 2000',
      'ok',
      'backoff 4000',
      'ok',
      'backoff 8000',
      'ok',
      'backoff 8000',
    ],
  },
  "an address backing off does not slow down another's": {
    steps: ['a', '!a', 'b', 'a'],
    want: ['ok', 'ok', 'backoff 1000'],
  },
  'the wait counts from the refusal, not from the request': {
    steps: ['a', '+500', '!a', '+500', 'a'],
    want: ['ok', 'backoff 500'],
  },
  'beyond the tracked addresses the longest-quiet one is forgotten, not the others': {
    steps: ['a', '!a', 'b', '!b', 'c', '!c', 'd', '!d', 'e', '!e', 'a', 'b', 'e'],
    want: ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'backoff 1000', 'backoff 1000'],
  },
}

Object.assign(cases, {
  'a request that leaves frees exactly one place': {
    steps: ['a', 'b', 'c', '-a', 'd', 'e'],
    want: ['ok', 'ok', 'ok', 'ok', 'busy 1000'],
  },
  'a leave for an address that was not waiting frees nothing': {
    steps: ['-x', 'a', 'b', 'c', 'd'],
    want: ['ok', 'ok', 'ok', 'busy 1000'],
  },
})

/** Two waiting requests per address allowed: one leaving leaves the other in place. */
const twoPerPeer: Record<string, { steps: string[]; want: string[] }> = {
  'with two per address, one leaving leaves the other counted': {
    steps: ['a', 'a', 'a', '-a', 'a', 'a'],
    want: ['ok', 'ok', 'peer 1000', 'ok', 'peer 1000'],
  },
}

/** The defaults: eight in the queue, one per address, a wait of a second after a wrong secret. */
const defaults: Record<string, { steps: string[]; want: string[] }> = {
  'the default limits': {
    steps: ['a', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', '!a', 'a', '+1000', 'a'],
    want: ['ok', 'peer 1000', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'busy 1000', 'backoff 1000', 'ok'],
  },
}

describe('RecoveryAdmission', () => {
  const run = (limits: RecoveryLimits | undefined, tc: { steps: string[]; want: string[] }) => {
    let now = 0
    const admission = new RecoveryAdmission(limits, () => now)
    const got: string[] = []
    for (const step of tc.steps) {
      if (step.startsWith('+')) now += Number(step.slice(1))
      else if (step.startsWith('-')) admission.leave(step.slice(1))
      else if (step.startsWith('!')) admission.leaveWrongSecret(step.slice(1))
      else {
        const verdict = admission.admit(step)
        got.push(verdict.admitted ? 'ok' : `${verdict.reason} ${verdict.retryAfterMs}`)
      }
    }
    expect(got).to.deep.equal(tc.want)
  }
  for (const [name, tc] of Object.entries(twoPerPeer))
    it(name, () => run({ ...LIMITS, queuedPerPeer: 2 }, tc))
  for (const [name, tc] of Object.entries(defaults)) it(name, () => run(undefined, tc))
  for (const [name, tc] of Object.entries(cases)) it(name, () => run(LIMITS, tc))
})

describe("the state disk's mark in the LUKS2 header", () => {
  const dump = (tokens: Record<string, unknown>) => JSON.stringify({ keyslots: {}, tokens })
  it('skips tokens of other types and finds ours by its slot', () => {
    const json = dump({
      '0': { type: 'systemd-tpm2', keyslots: ['1'] },
      '3': { type: STATE_DISK_TOKEN_TYPE, keyslots: [], state: 'initialized' },
    })
    expect(findMark(json)).to.deep.equal({ tokenId: 3, mark: 'initialized' })
    expect(findMark(dump({ '0': { type: 'systemd-tpm2' } }))).to.equal(undefined)
    expect(findMark(JSON.stringify({ keyslots: {} }))).to.equal(undefined)
  })
  it('names the token, its state and the states it may have', () => {
    expect(() => findMark(dump({ '2': { type: STATE_DISK_TOKEN_TYPE, state: 'wiped' } }))).to.throw(
      'LUKS2 token 2 (constellation-state-disk) has state "wiped"; want one of new, initialized, reset',
    )
  })
})
