/**
 * Runs every bench/*.bench.ts (or those named on the command line) and prints one JSON object:
 * { machine, goals, results: { <bench name>: <its result> } }. Each bench module default-exports
 * an async function returning plain JSON data; medians and units are in the keys (e.g. medianMs).
 * `goals` (also a table on stderr) sets the figures of the performance goals beside the goals and
 * this run's `node -e 0` (bench/goals.ts).
 */
import { readdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { goalRows, goalTable } from './goals.js'
import { nodeBaseline } from './stats.js'

const dir = path.dirname(fileURLToPath(import.meta.url))
const wanted = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort()

// this run's floor for a process start, measured before the benches load the machine
const baseline = await nodeBaseline(15)
const results: Record<string, unknown> = {}
for (const file of files) {
  const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as { default: () => Promise<unknown> }
  const name = file.replace(/\.bench\.ts$/, '')
  process.stderr.write(`bench: ${name}…\n`)
  results[name] = await mod.default()
}
const machine = {
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  node: process.version,
  nodeE0MedianMs: baseline.medianMs,
}
const goals = goalRows(results, baseline.medianMs)
if (goals.length > 0) process.stderr.write(`\n${goalTable(goals, baseline.medianMs)}\n`)
console.log(JSON.stringify({ machine, goals, results }, null, 2))
