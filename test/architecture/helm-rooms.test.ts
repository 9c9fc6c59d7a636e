/**
 * helm's two rooms (docs/architecture.md): binary/ is the helm adapter and knows no release, so it
 * never imports releases/; releases/ reaches the adapter only through binary/index.ts.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'

const HELM = path.resolve(import.meta.dirname, '../../src/lib/helm')
const BINARY = path.join(HELM, 'binary')
const RELEASES = path.join(HELM, 'releases')

/** [file, resolved import] for each relative import of the .ts files in `dir`. */
function importsIn(dir: string): Array<[string, string]> {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) => {
      const file = path.join(dir, f)
      const text = readFileSync(file, 'utf8')
      return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m): [string, string] => [
        file,
        path.resolve(dir, m[1]!),
      ])
    })
}

const show = ([from, to]: [string, string]) => `${path.relative(HELM, from)} -> ${path.relative(HELM, to)}`

describe('architecture: helm binary/ and releases/', () => {
  it('the binary adapter imports nothing of the release catalogue', () => {
    const up = importsIn(BINARY).filter(([, to]) => !to.startsWith(BINARY + path.sep))
    expect(up.filter(([, to]) => to.startsWith(HELM + path.sep)).map(show)).to.deep.equal([])
  })

  it('the catalogue reaches the adapter only through binary/index.ts', () => {
    const inner = importsIn(RELEASES).filter(
      ([, to]) => to.startsWith(BINARY + path.sep) && to !== path.join(BINARY, 'index.js'),
    )
    expect(inner.map(show)).to.deep.equal([])
  })
})
