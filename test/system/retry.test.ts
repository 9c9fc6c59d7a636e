import { expect } from '../support/chai.js'
import { describeRetry, retry } from '../../src/lib/system/index.js'
import { type RetryOptions } from '../../src/lib/system/retry.js'

/** Runs `retry` over a function that fails `failures` times; returns the delays it slept. */
async function sleptDelays(failures: number, opts: Partial<RetryOptions>): Promise<number[]> {
  const slept: number[] = []
  let calls = 0
  await retry(
    async () => {
      if (calls++ < failures) throw new Error('transient')
    },
    {
      attempts: 10,
      initialDelayMs: 100,
      retryable: () => true,
      sleep: async (ms) => void slept.push(ms),
      ...opts,
    },
  )
  return slept
}

describe('retry: backoff and jitter', () => {
  const cases: Record<string, { opts: Partial<RetryOptions>; want: number[] }> = {
    'no jitter: doubling delays, capped': { opts: { maxDelayMs: 300 }, want: [100, 200, 300, 300] },
    'jitter at the low end of the range': {
      opts: { jitter: 0.2, random: () => 0 },
      want: [80, 160, 320, 640],
    },
    'jitter at the high end of the range': {
      opts: { jitter: 0.2, random: () => 0.999999 },
      want: [120, 240, 480, 960],
    },
    'jitter in the middle is the plain delay': {
      opts: { jitter: 0.5, random: () => 0.5 },
      want: [100, 200, 400, 800],
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => expect(await sleptDelays(4, tc.opts)).to.deep.equal(tc.want))

  it('Infinity attempts retry until success; onRetry sees the jittered delay', async () => {
    const seen: number[] = []
    const slept = await sleptDelays(20, {
      attempts: Number.POSITIVE_INFINITY,
      maxDelayMs: 100,
      jitter: 0.1,
      random: () => 0,
      onRetry: (_err, _attempt, ms) => seen.push(ms),
    })
    expect(slept).to.have.length(20)
    expect(seen).to.deep.equal(slept)
    expect(new Set(slept)).to.deep.equal(new Set([90]))
  })

  const steadyCases: Record<string, { steadyDelayMs?: number; want: number[] }> = {
    'a steady failure waits the initial delay; the backoff starts over from there': {
      want: [100, 200, 100, 100, 100, 200],
    },
    'a steady failure waits steadyDelayMs when given; other failures still back off from the initial delay': {
      steadyDelayMs: 25,
      want: [100, 200, 25, 25, 100, 200],
    },
  }
  for (const [name, tc] of Object.entries(steadyCases))
    it(name, async () => {
      const errors = ['busy', 'busy', 'nobody listens', 'nobody listens', 'busy', 'busy']
      const slept: number[] = []
      let call = 0
      await retry(
        async () => {
          const err = errors[call++]
          if (err) throw new Error(err)
        },
        {
          attempts: 10,
          initialDelayMs: 100,
          ...(tc.steadyDelayMs !== undefined && { steadyDelayMs: tc.steadyDelayMs }),
          maxDelayMs: 1_000,
          retryable: () => true,
          steady: (err) => (err as Error).message === 'nobody listens',
          sleep: async (ms) => void slept.push(ms),
        },
      )
      expect(slept).to.deep.equal(tc.want)
    })
})

describe('describeRetry: one line per retry, for the person waiting', () => {
  const cases: Record<
    string,
    { err: unknown; attempt: number; attempts: number; delayMs: number; want: string }
  > = {
    'which attempt of how many, why, and the wait': {
      err: new Error('connect ECONNREFUSED 10.0.0.1:6443'),
      attempt: 2,
      attempts: 5,
      delayMs: 4_000,
      want: 'attempt 2 of 5 failed: connect ECONNREFUSED 10.0.0.1:6443; trying again in 4s',
    },
    'unbounded attempts leave out "of N"': {
      err: new Error('node not reachable yet'),
      attempt: 7,
      attempts: Number.POSITIVE_INFINITY,
      delayMs: 500,
      want: 'attempt 7 failed: node not reachable yet; trying again in 0.5s',
    },
    'the cause chain on one line': {
      err: new Error('reading the releases', {
        cause: new Error('helm list exited with code 1:\nError: unreachable'),
      }),
      attempt: 1,
      attempts: 3,
      delayMs: 30_000,
      want: 'attempt 1 of 3 failed: reading the releases: helm list exited with code 1: Error: unreachable; trying again in 30s',
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(name, () => expect(describeRetry(tc.err, tc.attempt, tc.attempts, tc.delayMs)).to.equal(tc.want))

  it('a page of output is cut to one readable line', () => {
    const line = describeRetry(new Error('x'.repeat(5_000)), 1, 2, 1_000)
    expect(line.length).to.be.below(400)
    expect(line).to.match(/x…; trying again in 1s$/)
  })
})
