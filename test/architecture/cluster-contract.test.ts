/**
 * The cluster contract has one owner (src/lib/contract/, docs/architecture.md): the API server
 * port is spelled there and nowhere else in src/, comments included, so that a second owner cannot
 * start as a literal.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { GENERATED, SRC, tsFiles } from './source-tree.js'

const OWNER = path.join(SRC, 'lib', 'contract')

describe('architecture: one owner for the cluster contract', () => {
  it('the API server port is a literal only in src/lib/contract', () => {
    const literals = tsFiles(SRC, [OWNER, GENERATED]).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /\b6443\b/.test(line) ? [`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    )
    expect(literals, 'use API_SERVER_PORT from src/lib/contract').to.deep.equal([])
  })
})
