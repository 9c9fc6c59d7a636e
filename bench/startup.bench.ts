/**
 * Cold start of the CLI process (`--version`, `--help`, and `--help` rendered by oclif as a
 * terminal gets it) beside a bare `node -e 0`, in both environments (env.ts). Each figure is a ratio to the baseline of the same run, beside its goal
 * (DESIGN.md §6). The three commands take turns within each round, so that a machine busy with
 * other work slows all of them alike instead of whichever happened to run then.
 */
import { spawn } from 'node:child_process'
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

async function timed(fn: () => Promise<void>): Promise<number> {
  const start = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - start) / 1e6
}

async function measure(env: NodeJS.ProcessEnv) {
  const samples = {
    nodeBaseline: [] as number[],
    version: [] as number[],
    help: [] as number[],
    helpInColour: [] as number[],
  }
  for (let i = 0; i < RUNS; i++) {
    samples.nodeBaseline.push(await timed(() => run(['-e', '0'], env)))
    samples.version.push(await timed(() => run([CLI, '--version'], env)))
    samples.help.push(await timed(() => run([CLI, '--help'], env)))
    samples.helpInColour.push(await timed(() => run([CLI, '--help'], { ...env, FORCE_COLOR: '1' })))
  }
  const nodeBaseline = summarize(samples.nodeBaseline)
  const figure = (name: keyof typeof GOAL_RATIO) => {
    const stats = summarize(samples[name])
    const ratio = Math.round((stats.medianMs / nodeBaseline.medianMs) * 100) / 100
    return { ...stats, ratioToNode: ratio, goalRatio: GOAL_RATIO[name], meetsGoal: ratio <= GOAL_RATIO[name] }
  }
  const helpInColour = summarize(samples.helpInColour)
  return {
    nodeBaseline,
    version: figure('version'),
    help: figure('help'),
    // what a terminal gets: oclif renders, as the prebuilt pages are the plain 80-column ones
    helpInColour: {
      ...helpInColour,
      ratioToNode: Math.round((helpInColour.medianMs / nodeBaseline.medianMs) * 100) / 100,
    },
  }
}

export default async function startup() {
  await run([CLI, '--help'], ENVIRONMENTS.machine) // warm the page cache once, as on any machine that ran the CLI before
  return {
    ...(await measure(ENVIRONMENTS.machine)),
    withoutNodeExtraCaCerts: await measure(ENVIRONMENTS.withoutNodeExtraCaCerts),
  }
}
