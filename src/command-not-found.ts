/**
 * oclif's command_not_found hook: a usage error (exit 2) that names the closest command, or the
 * command that replaces one of the original Constellation CLI's names.
 */
import { Errors, type Hook } from '@oclif/core'
import { ExitCode } from './lib/errors/index.js'

/** Names from the original Constellation CLI, and what does that job here. */
export const ORIGINAL_CLI_NAMES: Record<string, string> = {
  apply: 'init',
  'upgrade apply': 'upgrade execute --helm',
  'config fetch-measurements': 'config measurements',
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
  const visible = [
    ...opts.config.commands.filter((c) => !c.hidden).map((c) => c.id),
    ...opts.config.topics.filter((t) => !t.hidden).map((t) => t.name),
  ].map((id) => id.split(':').join(' '))
  const suggestion = suggestCommand(typed, visible)
  const fromOriginal = ORIGINAL_CLI_NAMES[typed] !== undefined
  const hint = suggestion
    ? `Did you mean \`${opts.config.bin} ${suggestion}\`?${fromOriginal ? ` It replaces the original Constellation CLI's \`${typed}\`.` : ''}`
    : `Run \`${opts.config.bin} --help\` for the list of commands.`
  // oclif renders this outside any command (no BaseCommand.catch here): its CLIError keeps exit 2
  throw new Errors.CLIError(`"${typed}" is not a ${opts.config.bin} command. ${hint}`, {
    exit: ExitCode.Usage,
  })
}
