/**
 * The simulator (src/lib/simulator: the Kubernetes API contract fake, the simulated state-disk
 * mapping, the paths of the fakes in simulator/) is a test double. In src/ only these may import it:
 * the mini flow, which runs it as its Kubernetes simulator and says so (DESIGN §4's one exception);
 * the wiring, which picks simulated parts where `mini` asks for them (`state-disk setup
 * --simulate-mapping`); and src/mini-simulator.ts, its own process. No other flow, domain, command
 * or entry reaches a fake. Tests and benches use it freely.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { SRC, tsFiles } from './source-tree.js'

const SIMULATOR = path.join(SRC, 'lib', 'simulator')
const ALLOWED = [
  SIMULATOR + path.sep,
  path.join(SRC, 'lib', 'mini') + path.sep,
  path.join(SRC, 'wiring') + path.sep,
  path.join(SRC, 'mini-simulator.ts'),
]

/** Static imports, re-exports and dynamic imports (type-only ones too) that reach the simulator. */
function reachesSimulator(file: string): boolean {
  const specs = [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)]
  return specs.some((m) => {
    const to = path.resolve(path.dirname(file), m[1]!)
    return to === SIMULATOR || to.startsWith(SIMULATOR + path.sep)
  })
}

describe('architecture: who may use the simulator', () => {
  it('in src/ only the mini flow, the wiring and the simulator process import src/lib/simulator', () => {
    const offenders = tsFiles(SRC)
      .filter((f) => !ALLOWED.some((a) => f === a || (a.endsWith(path.sep) && f.startsWith(a))))
      .filter(reachesSimulator)
      .map((f) => path.relative(SRC, f))
    expect(offenders).to.deep.equal([])
  })
})
