/** linesProgress: mini up's plain step lines, and no step started after an interrupt. */
import { expect } from '../support/chai.js'
import { linesProgress } from '../../src/lib/ui/index.js'

describe('linesProgress', () => {
  it('prints each title and what a step reports, indented', async () => {
    const lines: string[] = []
    await linesProgress((l) => lines.push(l))([
      { title: 'one', run: (report) => Promise.resolve(report('detail')) },
      { title: 'two', run: () => Promise.resolve() },
    ])
    expect(lines).to.deep.equal(['  one', '    detail', '  two'])
  })

  it('starts no step, nor prints its title, once the signal is aborted', async () => {
    const lines: string[] = []
    const interrupt = new AbortController()
    const ran: string[] = []
    const steps = ['one', 'two', 'three'].map((title) => ({
      title,
      run: () => {
        ran.push(title)
        if (title === 'one') interrupt.abort('SIGINT') // Ctrl-C while the first step runs
        return Promise.resolve()
      },
    }))
    const err = await linesProgress((l) => lines.push(l), { signal: interrupt.signal })(steps).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).to.equal('SIGINT')
    expect(ran).to.deep.equal(['one'])
    expect(lines).to.deep.equal(['  one'])
  })
})
