import { expect } from '../support/chai.js'
import { goalRows, goalTable } from '../../bench/goals.js'

/** The shapes the benches return, with only the keys the goals read. */
const RESULTS = {
  join: {
    rounds: [
      { joinsPerSecond: 70, serviceCpuMsPerJoin: 9, rejoinsPerSecond: 90 },
      { joinsPerSecond: 101.5, serviceCpuMsPerJoin: 6.2, rejoinsPerSecond: 150 },
    ],
  },
  init: { initOverheadWithoutKubeadmFake: { medianMs: 150 } },
  startup: { help: { ratioToNode: 1.5 }, version: { ratioToNode: 1.12 } },
  backup: { medianMs: 2999 },
  mini: { up1cp2w: { wall: { medianMs: 8001 } }, up3cp3w: { wall: { medianMs: 11_000 } } },
  yaml: { '1024KiB': { msPerMiB: 130 } },
}

describe('bench goals: each figure of the run beside its goal', () => {
  const rows = goalRows(RESULTS, 60)
  const byFigure = Object.fromEntries(rows.map((r) => [r.figure, r]))

  const cases: Record<string, { value: number; meets: boolean; goal: string }> = {
    'join service CPU per attested join (500 at once)': { value: 6.2, meets: false, goal: '≤ 5 ms' },
    'attested joins/s, 500 at once': { value: 101.5, meets: true, goal: '≥ 100 /s' },
    'rejoins/s, 500 at once': { value: 150, meets: true, goal: '≥ 150 /s' },
    'init overhead (kubeadm fake subtracted) / node -e 0': { value: 2.5, meets: true, goal: '≤ 2.5 ×' },
    '--help / node -e 0': { value: 1.5, meets: true, goal: '≤ 1.5 ×' },
    '--version / node -e 0': { value: 1.12, meets: false, goal: '≤ 1.1 ×' },
    'backup of 10,000 custom resources': { value: 2999, meets: true, goal: '≤ 3000 ms' },
    'mini up 1 control plane + 2 workers': { value: 8001, meets: false, goal: '≤ 8000 ms' },
    'mini up 3 control planes + 3 workers': { value: 11_000, meets: true, goal: '≤ 12000 ms' },
    'YAML load, 1 MiB': { value: 130, meets: true, goal: '≤ 300 ms/MiB' },
  }
  for (const [figure, want] of Object.entries(cases))
    it(`${figure}: ${want.value}, ${want.meets ? 'met' : 'not met'}`, () =>
      expect(byFigure[figure]).to.deep.include(want))

  it('the 500-node round is the one compared, not the first', () =>
    expect(byFigure['rejoins/s, 500 at once']?.value).to.equal(150))

  it('a bench that did not run leaves its figures out', () => {
    const only = goalRows({ yaml: RESULTS.yaml }, 60)
    expect(only.map((r) => r.figure)).to.deep.equal(['YAML load, 1 MiB'])
    expect(goalRows({ init: {} }, 60)).to.deep.equal([])
  })

  it('the table names the baseline and says which goals are not met', () => {
    const table = goalTable(rows, 60).split('\n')
    expect(table[0]).to.equal('node -e 0 in this run: 60 ms')
    expect(table.find((l) => l.startsWith('--version'))).to.match(/1\.12 ×\s+≤ 1\.1 ×\s+NOT MET$/)
    expect(table.find((l) => l.startsWith('YAML'))).to.match(/130 ms\/MiB\s+≤ 300 ms\/MiB\s+met$/)
  })
})
