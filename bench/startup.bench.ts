/** Cold start of the CLI process (`--version`, `--help`) beside a bare `node -e 0`, in both environments (env.ts). */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ENVIRONMENTS } from './env.js'
import { summarize, timeRuns } from './stats.js'

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/run.js')
const RUNS = 15

function run(args: string[], env: NodeJS.ProcessEnv = ENVIRONMENTS.machine): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'ignore', env })
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited ${code}`)),
    )
  })
}

export default async function startup() {
  await run([CLI, '--help']) // warm the page cache once, as on any machine that ran the CLI before
  return {
    nodeBaseline: summarize(await timeRuns(RUNS, () => run(['-e', '0']))),
    version: summarize(await timeRuns(RUNS, () => run([CLI, '--version']))),
    help: summarize(await timeRuns(RUNS, () => run([CLI, '--help']))),
    targetVersionMedianMs: 150,
    withoutNodeExtraCaCerts: {
      nodeBaseline: summarize(
        await timeRuns(RUNS, () => run(['-e', '0'], ENVIRONMENTS.withoutNodeExtraCaCerts)),
      ),
      version: summarize(
        await timeRuns(RUNS, () => run([CLI, '--version'], ENVIRONMENTS.withoutNodeExtraCaCerts)),
      ),
      help: summarize(await timeRuns(RUNS, () => run([CLI, '--help'], ENVIRONMENTS.withoutNodeExtraCaCerts))),
    },
  }
}
