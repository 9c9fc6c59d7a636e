/** Small edges of the command: reading the input file and duration flags, with clear errors. */
import { readFile } from 'node:fs/promises'
import { CliError, UsageError, isErrnoException } from '../errors/index.js'

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

export async function readInputFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    if (isErrnoException(err, 'ENOENT')) throw new CliError(`input ${file} does not exist`, 2)
    throw new CliError(`reading input ${file}`, 1, undefined, { cause: err })
  }
}

/** `30m`, `24h`, `7d` → milliseconds; `flag` names the source in the error. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+)(s|m|h|d)$/.exec(text)
  if (!m) throw new UsageError(`${flag} ${JSON.stringify(text)} is not a duration like 30m, 24h or 7d`)
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]
}
