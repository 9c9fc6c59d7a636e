/**
 * The YAML loader on configs of unknown keys (the worst case issue 11 found: 1 MB took 49 s).
 * Loading must stay linear: msPerMiB should hold about steady as the size doubles.
 */
import { YamlProblemsError } from '../src/lib/yaml/index.js'
import { summarize, timeRuns } from './stats.js'
import { parseConfig } from '../src/lib/config/load.js'

const SIZES_KIB = [256, 512, 1024]

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
  const results: Record<string, unknown> = {}
  for (const kib of SIZES_KIB) {
    const text = unknownKeys(kib)
    const samples = await timeRuns(3, async () => {
      try {
        parseConfig(text, 'bench.yaml')
      } catch (err) {
        if (!(err instanceof YamlProblemsError)) throw err // every key is a problem: that is the point
      }
    })
    const stats = summarize(samples)
    results[`${kib}KiB`] = { ...stats, msPerMiB: Math.round((stats.medianMs * 1024) / kib) }
  }
  return results
}
