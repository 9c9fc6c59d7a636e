/**
 * Cold start of the CLI process (`--version`, `--help`, and `--help` rendered by oclif as a
 * terminal gets it) beside a bare `node -e 0`, in both environments (env.ts). Each figure is a
 * ratio to the baseline of the same run, beside its goal (DESIGN.md §6), by wall-clock median and
 * by CPU time. The commands take turns within each round,
 * so that a machine busy with other work slows all of them alike instead of whichever happened to
 * run then; CPU time is the steadier figure on a shared machine.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ENVIRONMENTS } from './env.js'
import { summarize } from './stats.js'

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/run.js')
const RUNS = 21

/** Goals as a multiple of `node -e 0`'s median. */
const GOAL_RATIO = { version: 1.1, help: 1.5 } as const

function run(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'ignore', env })
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited ${code}`)),
    )
  })
}

/**
 * CPU time (user + system) of this process's finished children so far, in ms, from /proc/self/stat
 * (cutime + cstime, in clock ticks: USER_HZ is 100 on Linux); NaN where there is no /proc. Summed over all runs it
 * measures each command's own work, which other load on the machine barely changes.
 */
function childrenCpuMs(): number {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[13]) + Number(fields[14])) * 10 // fields 16 and 17 of stat
  } catch {
    return NaN
  }
}

const COMMANDS = {
  nodeBaseline: ['-e', '0'],
  version: [CLI, '--version'],
  help: [CLI, '--help'],
  // what a terminal gets: oclif renders, as the prebuilt pages are the plain 80-column ones
  helpInColour: [CLI, '--help'],
} as const
type Command = keyof typeof COMMANDS

async function measure(env: NodeJS.ProcessEnv) {
  const samples = { nodeBaseline: [], version: [], help: [], helpInColour: [] } as Record<Command, number[]>
  const cpuMs = { nodeBaseline: 0, version: 0, help: 0, helpInColour: 0 } as Record<Command, number>
  for (let i = 0; i < RUNS; i++) {
    for (const [name, args] of Object.entries(COMMANDS) as Array<[Command, readonly string[]]>) {
      const cpuBefore = childrenCpuMs()
      const start = process.hrtime.bigint()
      await run([...args], name === 'helpInColour' ? { ...env, FORCE_COLOR: '1' } : env)
      samples[name].push(Number(process.hrtime.bigint() - start) / 1e6)
      cpuMs[name] += childrenCpuMs() - cpuBefore
    }
  }
  const round = (x: number) => Math.round(x * 100) / 100
  const nodeBaseline = { ...summarize(samples.nodeBaseline), cpuMsPerRun: round(cpuMs.nodeBaseline / RUNS) }
  const figure = (name: Command) => {
    const stats = summarize(samples[name])
    const cpuMsPerRun = round(cpuMs[name] / RUNS)
    const ratio = round(stats.medianMs / nodeBaseline.medianMs)
    const cpuRatio = round(cpuMsPerRun / nodeBaseline.cpuMsPerRun)
    const goal = name === 'version' || name === 'help' ? GOAL_RATIO[name] : undefined
    return {
      ...stats,
      ratioToNode: ratio,
      cpuMsPerRun,
      cpuRatioToNode: cpuRatio,
      ...(goal === undefined
        ? {}
        : { goalRatio: goal, meetsGoal: ratio <= goal, cpuMeetsGoal: cpuRatio <= goal }),
    }
  }
  return {
    nodeBaseline,
    version: figure('version'),
    help: figure('help'),
    helpInColour: figure('helpInColour'),
  }
}

export default async function startup() {
  await run([CLI, '--help'], ENVIRONMENTS.machine) // warm the page cache once, as on any machine that ran the CLI before
  return {
    ...(await measure(ENVIRONMENTS.machine)),
    withoutNodeExtraCaCerts: await measure(ENVIRONMENTS.withoutNodeExtraCaCerts),
  }
}
