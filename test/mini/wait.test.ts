import { getEventListeners } from 'node:events'
import { waitForExit } from '../../src/lib/mini/wait.js'
import { expect } from '../support/chai.js'

const exitedWith = (code: number | null) => ({ pid: 1, exited: Promise.resolve(code) })

describe('mini waits: nothing left on the shared abort signal', () => {
  it('a 3 + 3 cluster waits 12 times on one signal (setup and bootstrap per node): no listener stays', async () => {
    const interrupt = new AbortController()
    for (let i = 0; i < 12; i++)
      await waitForExit(exitedWith(0), {
        what: `node ${i}`,
        log: '/dev/null',
        timeoutMs: 60_000,
        signal: interrupt.signal,
      })
    // Node warns (MaxListenersExceededWarning) at the 11th listener: every wait must take its own back
    expect(getEventListeners(interrupt.signal, 'abort')).to.have.length(0)
  })

  it('a failed wait takes its listener back too', async () => {
    const interrupt = new AbortController()
    await expect(
      waitForExit(exitedWith(1), {
        what: 'worker-0',
        log: '/dev/null',
        timeoutMs: 60_000,
        signal: interrupt.signal,
      }),
    ).to.be.rejectedWith('worker-0 exited 1')
    expect(getEventListeners(interrupt.signal, 'abort')).to.have.length(0)
  })

  it('an abort still ends a wait', async () => {
    const interrupt = new AbortController()
    const never = { pid: 1, exited: new Promise<number | null>(() => {}) }
    const waiting = waitForExit(never, {
      what: 'worker-0',
      log: '/dev/null',
      timeoutMs: 60_000,
      signal: interrupt.signal,
    })
    interrupt.abort('SIGINT')
    await expect(waiting).to.be.rejectedWith('worker-0 was interrupted')
  })
})
