import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { withTempDir } from '../support/temp.js'

const COMMITTED = path.join(REPO_ROOT, 'src/gen/schemas.ts')

describe('src/gen/schemas.ts', function () {
  it('is what scripts/gen-schemas.ts produces from the schema modules', function () {
    return withTempDir(async (tmp) => {
      const out = path.join(tmp, 'schemas.ts')
      execFileSync(process.execPath, ['--import', 'tsx', 'scripts/gen-schemas.ts', out], {
        cwd: REPO_ROOT,
        stdio: 'pipe',
      })
      const generated = readFileSync(out, 'utf8')
      const committed = readFileSync(COMMITTED, 'utf8')
      if (committed === generated) return
      // A whole-file diff of ~160 kB of generated code helps nobody; name the first line that differs.
      const want = generated.split('\n')
      const line = committed.split('\n').findIndex((l, n) => l !== want[n]) + 1
      expect.fail(
        `src/gen/schemas.ts is stale (line ${line || want.length + 1} differs): run npm run schemas`,
      )
    }, 'constell-schemas-')
  })
})
