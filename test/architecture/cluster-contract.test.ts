/**
 * The cluster contract has one owner (src/lib/contract/, docs/architecture.md): the API server
 * port is spelled there and nowhere else in src/, comments included, so that a second owner cannot
 * start as a literal.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'

const SRC = path.resolve(import.meta.dirname, '../../src')
const OWNER = path.join(SRC, 'lib', 'contract')
const GENERATED = path.join(SRC, 'gen')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return full === OWNER || full === GENERATED ? [] : sourceFiles(full)
    return e.name.endsWith('.ts') ? [full] : []
  })
}

describe('architecture: one owner for the cluster contract', () => {
  it('the API server port is a literal only in src/lib/contract', () => {
    const literals = sourceFiles(SRC).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /\b6443\b/.test(line) ? [`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    )
    expect(literals, 'use API_SERVER_PORT from src/lib/contract').to.deep.equal([])
  })
})
