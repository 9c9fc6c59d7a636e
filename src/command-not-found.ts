/**
 * oclif's command_not_found hook: a usage error (exit 2) that names the closest command, or the
 * command that replaces one of the original Constellation CLI's names.
 */
import { Errors, type Hook } from '@oclif/core'
import { ExitCode, renderError, UsageError } from './lib/errors/index.js'

/** Names from the original Constellation CLI, and what does that job here. */
export const ORIGINAL_CLI_NAMES: Record<string, string> = {
  apply: 'init',
}

export function suggestCommand(typed: string, commands: readonly string[]): string | undefined {
  const original = ORIGINAL_CLI_NAMES[typed]
  if (original) return original
  let best: { id: string; distance: number } | undefined
  for (const id of commands) {
    const distance = editDistance(typed, id)
    if (!best || distance < best.distance) best = { id, distance }
  }
  // more than a third of the name changed is a different word, not a typo
  return best && best.distance <= Math.max(2, Math.floor(typed.length / 3)) ? best.id : undefined
}

/** Levenshtein distance, one row at a time. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row.push(Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost))
    }
    prev = row
  }
  return prev[b.length] as number
}

export const commandNotFound: Hook<'command_not_found'> = async function (opts) {
  const typed = opts.id.split(':').join(' ')
  const commands = opts.config.commands.filter((c) => !c.hidden).map((c) => c.id.split(':').join(' '))
  const topics = opts.config.topics.filter((t) => !t.hidden).map((t) => t.name.split(':').join(' '))
  // With spaces between topic and command, oclif reads `init extra` as one unknown command id.
  const command = commands.filter((id) => typed.startsWith(`${id} `)).sort((x, y) => y.length - x.length)[0]
  const error = command
    ? new UsageError(
        `unexpected argument ${JSON.stringify(typed.slice(command.length + 1))} for \`${opts.config.bin} ${command}\``,
        `run \`${opts.config.bin} ${command} --help\` for its flags`,
      )
    : notACommand(typed, suggestCommand(typed, [...commands, ...topics]), opts.config.bin)
  // Rendered as every other error (one line each, no wrapping inside a command to copy); oclif's
  // ExitError then ends the run with exit 2 and prints nothing more.
  for (const line of renderError(error).lines) process.stderr.write(`${line}\n`)
  Errors.exit(ExitCode.Usage)
}

function notACommand(typed: string, suggestion: string | undefined, bin: string): UsageError {
  const fromOriginal = ORIGINAL_CLI_NAMES[typed] !== undefined
  const hint = suggestion
    ? `did you mean \`${bin} ${suggestion}\`?${fromOriginal ? ` It replaces the original Constellation CLI's \`${typed}\`.` : ''}`
    : `run \`${bin} --help\` for the list of commands`
  return new UsageError(`"${typed}" is not a ${bin} command`, hint)
}
