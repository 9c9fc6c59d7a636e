/**
 * The performance goals (issue 34) beside what this run measured: one row per figure, its value,
 * the goal, whether it is met. Ratios are to this run's own `node -e 0` (machines differ 2× in
 * speed; a ratio travels between them). A figure whose bench did not run is left out.
 */

export interface GoalRow {
  figure: string
  value: number
  unit: string
  goal: string
  meets: boolean
}

interface Goal {
  figure: string
  unit: string
  /** The measured value, or undefined when its bench did not run. */
  pick: (results: Results, nodeMs: number) => number | undefined
  atMost?: number
  atLeast?: number
}

/** bench/run.ts's results, keyed by bench name; each bench's own JSON shape. */
type Results = Record<string, unknown>

/** The value at a path of keys (a negative index counts from the end of an array). */
function at(value: unknown, ...keys: (string | number)[]): number | undefined {
  let here = value
  for (const key of keys) {
    if (Array.isArray(here) && typeof key === 'number') here = here.at(key)
    else if (here && typeof here === 'object') here = (here as Record<string | number, unknown>)[key]
    else return undefined
  }
  return typeof here === 'number' && Number.isFinite(here) ? here : undefined
}

const ratio = (ms: number | undefined, nodeMs: number) =>
  ms === undefined ? undefined : Math.round((ms / nodeMs) * 100) / 100

const GOALS: Goal[] = [
  {
    figure: 'join service CPU per attested join (500 at once)',
    unit: 'ms',
    pick: (r) => at(r.join, 'rounds', -1, 'serviceCpuMsPerJoin'),
    atMost: 5,
  },
  {
    figure: 'attested joins/s, 500 at once',
    unit: '/s',
    pick: (r) => at(r.join, 'rounds', -1, 'joinsPerSecond'),
    atLeast: 100,
  },
  {
    figure: 'rejoins/s, 500 at once',
    unit: '/s',
    pick: (r) => at(r.join, 'rounds', -1, 'rejoinsPerSecond'),
    atLeast: 150,
  },
  {
    figure: 'init overhead (kubeadm fake subtracted) / node -e 0',
    unit: '×',
    pick: (r, node) => ratio(at(r.init, 'initOverheadWithoutKubeadmFake', 'medianMs'), node),
    atMost: 2.5,
  },
  {
    figure: '--help / node -e 0',
    unit: '×',
    pick: (r) => at(r.startup, 'help', 'ratioToNode'),
    atMost: 1.5,
  },
  {
    figure: '--version / node -e 0',
    unit: '×',
    pick: (r) => at(r.startup, 'version', 'ratioToNode'),
    atMost: 1.1,
  },
  {
    figure: 'backup of 10,000 custom resources',
    unit: 'ms',
    pick: (r) => at(r.backup, 'medianMs'),
    atMost: 3000,
  },
  {
    figure: 'mini up 1 control plane + 2 workers',
    unit: 'ms',
    pick: (r) => at(r.mini, 'up1cp2w', 'wall', 'medianMs'),
    atMost: 8000,
  },
  {
    figure: 'mini up 3 control planes + 3 workers',
    unit: 'ms',
    pick: (r) => at(r.mini, 'up3cp3w', 'wall', 'medianMs'),
    atMost: 12000,
  },
  {
    figure: 'YAML load, 1 MiB',
    unit: 'ms/MiB',
    pick: (r) => at(r.yaml, '1024KiB', 'msPerMiB'),
    atMost: 300,
  },
]

export function goalRows(results: Results, nodeMs: number): GoalRow[] {
  return GOALS.flatMap((g) => {
    const value = g.pick(results, nodeMs)
    if (value === undefined) return []
    const meets = g.atMost !== undefined ? value <= g.atMost : value >= (g.atLeast ?? -Infinity)
    const goal = g.atMost !== undefined ? `≤ ${g.atMost}` : `≥ ${g.atLeast}`
    return [{ figure: g.figure, value, unit: g.unit, goal: `${goal} ${g.unit}`, meets }]
  })
}

/** The rows as a plain-text table, for stderr beside the JSON. */
export function goalTable(rows: readonly GoalRow[], nodeMs: number): string {
  const cells = rows.map((r) => [r.figure, `${r.value} ${r.unit}`, r.goal, r.meets ? 'met' : 'NOT MET'])
  const header = ['figure', 'this run', 'goal', '']
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: string[]) =>
    c
      .map((s, i) => s.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return [`node -e 0 in this run: ${nodeMs} ms`, line(header), ...cells.map(line)].join('\n')
}
