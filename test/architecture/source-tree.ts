/** The source tree the architecture checks read: where it is, and its TypeScript files. */
import { readdirSync } from 'node:fs'
import path from 'node:path'

export const ROOT = path.resolve(import.meta.dirname, '../..')
export const SRC = path.join(ROOT, 'src')
export const LIB = path.join(SRC, 'lib')
export const GENERATED = path.join(SRC, 'gen')

/** Every .ts file below `dir`, leaving out the folders `skip` names (absolute paths). */
export function tsFiles(dir: string, skip: readonly string[] = []): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return skip.includes(full) ? [] : tsFiles(full, skip)
    return e.name.endsWith('.ts') ? [full] : []
  })
}
