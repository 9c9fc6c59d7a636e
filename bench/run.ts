/**
 * Runs every bench/*.bench.ts (or those named on the command line) and prints one JSON object:
 * { machine, results: { <bench name>: <its result> } }. Each bench module default-exports an async
 * function returning plain JSON data; medians and units are in the keys (e.g. medianMs).
 */
import { readdirSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const dir = path.dirname(fileURLToPath(import.meta.url))
const wanted = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort()

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
}
console.log(JSON.stringify({ machine, results }, null, 2))
