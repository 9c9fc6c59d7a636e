/**
 * The YAML loader on configs of unknown keys (the worst case issue 11 found: 1 MB took 49 s).
 * Loading must stay linear: msPerMiB should hold about steady as the size doubles. The goal
 * (DESIGN.md §6) is a cost per MiB; `node -e 0` of the same run says how fast this machine was.
 */
import { YamlProblemsError } from '../src/lib/yaml/index.js'
import { nodeBaseline, summarize, timeRuns } from './stats.js'
import { parseConfig } from '../src/lib/config/load.js'

const SIZES_KIB = [256, 512, 1024]
const RUNS = 5
const GOAL_MS_PER_MIB = 300

function unknownKeys(kib: number): string {
  const lines: string[] = []
  for (let i = 0, size = 0; size < kib * 1024; i++) {
    const line = `key${i}: value${i}\n`
    lines.push(line)
    size += line.length
  }
  return lines.join('')
}

export default async function yaml() {
  const results: Record<string, unknown> = {
    nodeBaseline: await nodeBaseline(RUNS),
    goalMsPerMiB: GOAL_MS_PER_MIB,
  }
  for (const kib of SIZES_KIB) {
    const text = unknownKeys(kib)
    const samples = await timeRuns(RUNS, async () => {
      try {
        parseConfig(text, 'bench.yaml')
      } catch (err) {
        if (!(err instanceof YamlProblemsError)) throw err // every key is a problem: that is the point
      }
    })
    const stats = summarize(samples)
    const msPerMiB = Math.round((stats.medianMs * 1024) / kib)
    results[`${kib}KiB`] = { ...stats, msPerMiB, meetsGoal: msPerMiB <= GOAL_MS_PER_MIB }
  }
  return results
}
