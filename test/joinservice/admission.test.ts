import { expect } from '../support/chai.js'
import { Admission, DEFAULT_WORKER_JOIN_CONCURRENCY } from '../../src/lib/joinservice/admission.js'
import type { NodeRole } from '../../src/lib/nodeconfig/index.js'

/** Work that runs until the test finishes it, recording when it started and how many ran at once. */
class FakeJoins {
  readonly started: string[] = []
  running = 0
  maxRunning = 0
  private readonly finishers = new Map<string, (fail?: Error) => void>()

  work(name: string) {
    return () =>
      new Promise<string>((resolve, reject) => {
        this.started.push(name)
        this.running++
        this.maxRunning = Math.max(this.maxRunning, this.running)
        this.finishers.set(name, (fail) => {
          this.running--
          if (fail) reject(fail)
          else resolve(name)
        })
      })
  }

  finish(name: string, fail?: Error): void {
    const f = this.finishers.get(name)
    if (!f) throw new Error(`${name} has not started`)
    this.finishers.delete(name)
    f(fail)
  }

  /** Finishes whatever runs, oldest first, until everything did. */
  async drain(): Promise<void> {
    for (;;) {
      await tick()
      const next = this.finishers.keys().next()
      if (next.done) return
      this.finish(next.value)
    }
  }
}

const tick = () => new Promise((r) => setImmediate(r))

describe('admission', () => {
  const cases: Record<
    string,
    { role: NodeRole; count: number; workerConcurrency?: number; wantMax: number }
  > = {
    'serializes control-plane joins, in arrival order': {
      role: 'control-plane',
      count: 5,
      wantMax: 1,
    },
    'runs worker joins up to the limit at once': {
      role: 'worker',
      count: 10,
      workerConcurrency: 3,
      wantMax: 3,
    },
    'runs the default 32 worker joins at once, no more': {
      role: 'worker',
      count: 50,
      wantMax: DEFAULT_WORKER_JOIN_CONCURRENCY,
    },
  }
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const admission = new Admission({ workerConcurrency: tc.workerConcurrency })
      const joins = new FakeJoins()
      const names = Array.from({ length: tc.count }, (_, i) => `node-${i}`)
      const results = Promise.all(names.map((n) => admission.run(tc.role, joins.work(n))))
      await tick()
      expect(joins.running).to.equal(tc.wantMax)
      expect(admission.stats()[tc.role]).to.deep.equal({ active: tc.wantMax, queued: tc.count - tc.wantMax })
      await joins.drain()
      expect(await results, 'every join succeeds, none failed for concurrency').to.deep.equal(names)
      expect(joins.maxRunning).to.equal(tc.wantMax)
      expect(joins.started, 'in arrival order').to.deep.equal(names)
      expect(admission.stats()[tc.role], 'every turn given back').to.deep.equal({ active: 0, queued: 0 })
    })

  it('lets workers through while a control plane joins, and vice versa', async () => {
    const admission = new Admission({ workerConcurrency: 1 })
    const joins = new FakeJoins()
    const cp = admission.run('control-plane', joins.work('cp-1'))
    const w = admission.run('worker', joins.work('w-1'))
    await tick()
    expect(joins.started).to.deep.equal(['cp-1', 'w-1'])
    joins.finish('w-1')
    joins.finish('cp-1')
    expect(await Promise.all([cp, w])).to.deep.equal(['cp-1', 'w-1'])
  })

  it('frees the turn of a join that failed', async () => {
    const admission = new Admission()
    const joins = new FakeJoins()
    const first = admission.run('control-plane', joins.work('cp-1'))
    const second = admission.run('control-plane', joins.work('cp-2'))
    await tick()
    joins.finish('cp-1', new Error('key service down'))
    await expect(first).to.be.rejectedWith('key service down')
    await tick()
    expect(admission.stats()['control-plane']).to.deep.equal({ active: 1, queued: 0 })
    joins.finish('cp-2')
    expect(await second).to.equal('cp-2')
    expect(admission.stats()['control-plane']).to.deep.equal({ active: 0, queued: 0 })
  })

  it('takes a caller that hung up out of the queue; the rest keep their order', async () => {
    const admission = new Admission()
    const joins = new FakeJoins()
    const hangUp = new AbortController()
    const first = admission.run('control-plane', joins.work('cp-1'))
    const gone = admission.run('control-plane', joins.work('cp-2'), hangUp.signal)
    const third = admission.run('control-plane', joins.work('cp-3'))
    hangUp.abort(new Error('client cancelled'))
    await expect(gone).to.be.rejectedWith('client cancelled')
    expect(admission.stats()['control-plane']).to.deep.equal({ active: 1, queued: 1 })
    await joins.drain()
    expect(await Promise.all([first, third])).to.deep.equal(['cp-1', 'cp-3'])
    expect(joins.started).to.deep.equal(['cp-1', 'cp-3'])
  })

  it('refuses a caller that hung up before it queued', async () => {
    const admission = new Admission()
    await expect(
      admission.run('worker', () => Promise.resolve('ran'), AbortSignal.abort(new Error('gone'))),
    ).to.be.rejectedWith('gone')
  })

  for (const bad of [0, -1, 1.5, Number.NaN])
    it(`refuses a worker concurrency of ${bad}`, () => {
      expect(() => new Admission({ workerConcurrency: bad })).to.throw(RangeError, /want an integer ≥ 1/)
    })
})
