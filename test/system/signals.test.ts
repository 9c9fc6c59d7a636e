import { expect } from '../support/chai.js'
import { serveUntilStopped, type InterruptSignal } from '../../src/lib/system/index.js'
import { stopOnSignals, type DaemonSignalIo, type NodeDaemon } from '../../src/lib/system/signals.js'

function recordingIo() {
  const listeners = new Map<InterruptSignal, Set<() => void>>()
  const io: DaemonSignalIo & {
    events: string[]
    fire: (s: InterruptSignal) => void
    count: () => number
  } = {
    events: [],
    on: (s, l) => void (listeners.get(s) ?? listeners.set(s, new Set()).get(s)!).add(l),
    off: (s, l) => void listeners.get(s)?.delete(l),
    exit: (code) => void io.events.push(`exit ${code}`),
    exitAfterGrace: () => void io.events.push('exit after grace'),
    fire: (s) => [...(listeners.get(s) ?? [])].forEach((l) => l()),
    count: () => [...listeners.values()].reduce((n, set) => n + set.size, 0),
  }
  return io
}

/** A daemon whose stop() finishes when the test says; it records every call. */
function stubDaemon(events: string[]) {
  let finishStop!: () => void
  const stopped = new Promise<void>((resolve) => (finishStop = resolve))
  const daemon: NodeDaemon & { finishStop: () => void } = {
    start: () => Promise.resolve(void events.push('start')),
    stop: () => {
      events.push('stop')
      return stopped
    },
    done: stopped,
    finishStop,
  }
  return daemon
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('stopOnSignals: how every node daemon ends', () => {
  const cases: Record<string, { signals: InterruptSignal[]; stopFinishes: boolean; want: string[] }> = {
    'SIGTERM: graceful stop once, then exit after a grace': {
      signals: ['SIGTERM'],
      stopFinishes: true,
      want: ['stop', 'exit after grace'],
    },
    'SIGINT: the same': { signals: ['SIGINT'], stopFinishes: true, want: ['stop', 'exit after grace'] },
    'no exit while the graceful stop is still running': {
      signals: ['SIGTERM'],
      stopFinishes: false,
      want: ['stop'],
    },
    'a second SIGTERM exits at once with 143, without a second stop': {
      signals: ['SIGTERM', 'SIGTERM'],
      stopFinishes: false,
      want: ['stop', 'exit 143'],
    },
    'a second signal of the other kind exits with its own code (130)': {
      signals: ['SIGTERM', 'SIGINT'],
      stopFinishes: false,
      want: ['stop', 'exit 130'],
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const io = recordingIo()
      const daemon = stubDaemon(io.events)
      stopOnSignals(daemon, io)
      for (const signal of tc.signals) io.fire(signal)
      if (tc.stopFinishes) daemon.finishStop()
      await tick()
      expect(io.events).to.deep.equal(tc.want)
    })
  }

  it('the returned function hands both signals back', () => {
    const io = recordingIo()
    const release = stopOnSignals(stubDaemon(io.events), io)
    expect(io.count()).to.equal(2)
    release()
    expect(io.count()).to.equal(0)
  })
})

describe('serveUntilStopped', () => {
  it('starts, resolves once the daemon is done, and then leaves the signals alone', async () => {
    const io = recordingIo()
    const daemon = stubDaemon(io.events)
    const served = serveUntilStopped(daemon, io)
    await tick()
    expect(io.events).to.deep.equal(['start'])
    expect(io.count()).to.equal(2)
    daemon.finishStop() // stopped by itself (an Init took the node lock)
    await served
    expect(io.count()).to.equal(0)
    expect(io.events).to.deep.equal(['start'])
  })

  it('a daemon that cannot start: the error, and no listeners left behind', async () => {
    const io = recordingIo()
    const daemon = { ...stubDaemon(io.events), start: () => Promise.reject(new Error('port taken')) }
    await expect(serveUntilStopped(daemon, io)).to.be.rejectedWith('port taken')
    expect(io.count()).to.equal(0)
  })
})
