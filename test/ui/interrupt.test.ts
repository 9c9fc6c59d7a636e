import { expect } from '../support/chai.js'
import { exitCodeOf } from '../../src/lib/errors/index.js'
import type { InterruptSignal } from '../../src/lib/system/index.js'
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
