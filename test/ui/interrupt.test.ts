import { expect } from '../support/chai.js'
import { exitCodeOf } from '../../src/lib/errors/index.js'
import { abortOnInterrupt, type InterruptSignal } from '../../src/lib/system/index.js'
import { onInterrupt, promptOrAbort } from '../../src/lib/ui/index.js'
import { type InterruptIO } from '../../src/lib/ui/interrupt.js'

function recordingIO() {
  const listeners = new Map<InterruptSignal, Set<() => void>>()
  const io: InterruptIO & {
    lines: string[]
    exits: number[]
    fire: (s: InterruptSignal) => void
    count: () => number
  } = {
    lines: [],
    exits: [],
    on: (s, l) => void (listeners.get(s) ?? listeners.set(s, new Set()).get(s)!).add(l),
    off: (s, l) => void listeners.get(s)?.delete(l),
    stderr: (line) => void io.lines.push(line),
    exit: (code) => void io.exits.push(code),
    fire: (s) => [...(listeners.get(s) ?? [])].forEach((l) => l()),
    count: () => [...listeners.values()].reduce((n, set) => n + set.size, 0),
  }
  return io
}

describe('onInterrupt', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal} prints the state described at that moment and exits ${code}`, () => {
      const io = recordingIO()
      let state = 'nothing sent'
      onInterrupt(() => [`interrupted: ${state}`], io)
      state = 'the node has the request'
      io.fire(signal)
      expect(io.lines).to.deep.equal(['', 'interrupted: the node has the request'])
      expect(io.exits).to.deep.equal([code])
    })
  }

  it('a second signal exits without describing again; dispose removes both listeners', () => {
    const io = recordingIO()
    const dispose = onInterrupt(() => ['left: x'], io)
    expect(io.count()).to.equal(2)
    io.fire('SIGINT')
    io.fire('SIGINT')
    expect(io.lines).to.deep.equal(['', 'left: x'])
    expect(io.exits).to.deep.equal([130, 130])
    dispose()
    expect(io.count()).to.equal(0)
  })
})

describe('promptOrAbort', () => {
  it('turns an inquirer ExitPromptError into "aborted, nothing changed" with exit 130', async () => {
    const exit = Object.assign(new Error('User force closed the prompt with SIGINT'), {
      name: 'ExitPromptError',
    })
    const err = await promptOrAbort('upgrade', () => Promise.reject(exit)).catch((e: unknown) => e)
    expect(String((err as Error).message)).to.equal('upgrade: aborted, nothing changed')
    expect(exitCodeOf(err)).to.equal(130)
  })

  it('passes answers and other errors through', async () => {
    expect(await promptOrAbort('x', () => Promise.resolve(true))).to.equal(true)
    const other = new Error('boom')
    expect(await promptOrAbort('x', () => Promise.reject(other)).catch((e: unknown) => e)).to.equal(other)
  })
})

describe('one owner per signal: the innermost claim decides', () => {
  it('an inner onInterrupt speaks alone while it is active; the outer one is back after release', () => {
    const io = recordingIO()
    onInterrupt(() => ['status interrupted: nothing was changed'], io)
    const inner = onInterrupt(() => ['init interrupted: the node has the request'], io)
    io.fire('SIGINT')
    expect(io.lines).to.deep.equal(['', 'init interrupted: the node has the request'])
    expect(io.exits).to.deep.equal([130])
    inner()
    const again = recordingIO()
    onInterrupt(() => ['outer'], again)
    onInterrupt(() => ['inner'], again)()
    again.fire('SIGTERM')
    expect(again.lines).to.deep.equal(['', 'outer'])
    expect(again.exits).to.deep.equal([143])
  })

  it('one process listener per signal however deep the claims nest, none once all are released', () => {
    const io = recordingIO()
    const releases = [
      onInterrupt(() => ['a'], io),
      onInterrupt(() => ['b'], io),
      onInterrupt(() => ['c'], io),
    ]
    expect(io.count()).to.equal(2)
    releases.reverse().forEach((release) => release())
    expect(io.count()).to.equal(0)
  })

  it('abortOnInterrupt inside a command: the command cleans up itself, nothing exits behind its back', () => {
    const io = recordingIO()
    onInterrupt(() => ['mini up interrupted'], io)
    const interrupt = abortOnInterrupt(io)
    io.fire('SIGINT')
    expect(interrupt.signal.aborted).to.equal(true)
    expect(interrupt.signal.reason).to.equal('SIGINT')
    expect(io.exits, 'the outer handler must not exit while mini up removes what it started').to.deep.equal(
      [],
    )
    io.fire('SIGINT')
    expect(io.exits, 'a second Ctrl-C exits at once').to.deep.equal([130])
    interrupt.release()
  })
})
