/**
 * No file of these domains reaches itself through its imports, type-only imports included: a circle
 * means two files share a shape that belongs in a third (a types.ts), or a part that should be
 * passed in (bootstrapdata/provider's init lock). Domains join the list once their circles are open.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { LIB, tsFiles } from './source-tree.js'

const DOMAINS = ['bootstrapdata', 'helm']

/** The .ts files a file imports (static, type-only, re-export or dynamic), inside `root`. */
function importsOf(file: string, root: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)\.js'/g)]
    .map((m) => path.resolve(path.dirname(file), `${m[1]!}.ts`))
    .filter((f) => f.startsWith(root + path.sep))
}

/** One circle through `start` as a list of files, or undefined. */
function circleThrough(start: string, graph: Map<string, string[]>): string[] | undefined {
  const seen = new Set<string>()
  const walk = (file: string, trail: string[]): string[] | undefined => {
    for (const next of graph.get(file) ?? []) {
      if (next === start) return [...trail, next]
      if (seen.has(next)) continue
      seen.add(next)
      const found = walk(next, [...trail, next])
      if (found) return found
    }
    return undefined
  }
  return walk(start, [start])
}

describe('architecture: no import circles', () => {
  for (const domain of DOMAINS) {
    it(`inside ${domain}`, () => {
      const root = path.join(LIB, domain)
      const graph = new Map(tsFiles(root).map((f) => [f, importsOf(f, root)]))
      const circles = [...graph.keys()]
        .map((f) => circleThrough(f, graph))
        .filter((c): c is string[] => c !== undefined)
        .map((c) => c.map((f) => path.relative(root, f)).join(' -> '))
      expect(circles).to.deep.equal([])
    })
  }
})
