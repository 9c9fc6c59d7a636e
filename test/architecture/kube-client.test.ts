/**
 * The Kubernetes API has one owner (src/lib/kube/, docs/architecture.md): only kube imports
 * @kubernetes/client-node, so that bounds, error wording and the library's load cost are decided
 * in one place. Source, benchmarks and test harnesses are checked.
 *
 * Exempt, because there the library is the independent client a contract fake must satisfy
 * (DESIGN §4: check each fake against the real thing), not a way into the cluster:
 * the API contract fake's own tests (test/simulator/), and kube's own tests (test/kube/).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { ROOT, tsFiles } from './source-tree.js'

const OWNER = 'src/lib/kube/'
const EXEMPT = ['test/kube/', 'test/simulator/']
const IMPORT = /(?:from|import)\s*\(?\s*['"]@kubernetes\/client-node['"]/

describe('architecture: one owner for the Kubernetes API', () => {
  it('only src/lib/kube imports @kubernetes/client-node', () => {
    const importers = ['src', 'bench', 'test', 'scripts']
      .flatMap((dir) => tsFiles(path.join(ROOT, dir)))
      .map((file) => path.relative(ROOT, file).split(path.sep).join('/'))
      .filter((rel) => !rel.startsWith(OWNER) && !EXEMPT.some((dir) => rel.startsWith(dir)))
      .filter((rel) => IMPORT.test(readFileSync(path.join(ROOT, rel), 'utf8')))
    expect(importers, 'reach the API through src/lib/kube/index.ts').to.deep.equal([])
  })
})
