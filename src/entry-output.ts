/**
 * What the framework-free entries (src/init-run.ts, src/mini-run.ts) print, exactly as the oclif
 * commands would through BaseCommand: `this.log` is console.log of util.format, `logJson` is JSON
 * with two spaces, and a failure is rendered once.
 */
import { format } from 'node:util'
import { exitCodeOf, renderError } from './lib/errors/index.js'

export const print = (line: string) => process.stdout.write(`${format(line)}\n`)
export const printToStderr = (line: string) => process.stderr.write(`${format(line)}\n`)
export const printJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)

/** A failure as BaseCommand.catch renders it, and its exit code set. */
export function reportFailure(err: unknown, json: boolean): void {
  const code = exitCodeOf(err)
  const rendered = renderError(err, code)
  // with --json the error is the JSON on stdout only, as oclif's logToStderr stays quiet then
  if (json) printJson(rendered.json)
  else for (const line of rendered.lines) process.stderr.write(`${line}\n`)
  process.exitCode = code
}
