/**
 * The bundle's façade bypass (scripts/bundle-direct-imports.ts) on a small source tree with the
 * project's layout: a domain's index.ts re-exports two files; an entry that imports one name
 * through the index gets only that name's file, and what the plugin cannot map stays as written.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { build } from 'esbuild'
import { directImports } from '../../scripts/bundle-direct-imports.js'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

describe('bundle: imports through a domain façade load only the files they name (esbuild)', () => {
  let tmp: TempDir
  beforeEach(async () => {
    tmp = await makeTempDir()
    const src = path.join(tmp.dir, 'src')
    await mkdir(path.join(src, 'lib/shapes'), { recursive: true })
    const files: Record<string, string> = {
      'lib/shapes/index.ts': [
        "export { circle, RADIUS as radius } from './circle.js'",
        "export type { Circle } from './circle.js'",
        "export { square } from './square.js'",
        "export * from './star.js'",
      ].join('\n'),
      'lib/shapes/circle.ts':
        "export const RADIUS = 2\nexport type Circle = { r: number }\nexport const circle = () => 'CIRCLE-CODE'",
      'lib/shapes/square.ts': "console.log('SQUARE-LOADED')\nexport const square = () => 'SQUARE-CODE'",
      'lib/shapes/star.ts': "console.log('STAR-LOADED')\nexport const star = () => 'STAR-CODE'",
      'only-circle.ts': [
        'import {',
        '  circle,',
        '  radius as r,',
        '  type Circle,',
        "} from './lib/shapes/index.js'",
        'const c: Circle = { r }',
        'console.log(circle(), c)',
      ].join('\n'),
      'star.ts': "import { star } from './lib/shapes/index.js'\nconsole.log(star())",
    }
    for (const [file, text] of Object.entries(files)) await writeFile(path.join(src, file), text)
  })
  afterEach(() => tmp.cleanup())

  const bundle = async (entry: string, plugin: boolean) => {
    const src = path.join(tmp.dir, 'src')
    const out = await build({
      entryPoints: [path.join(src, entry)],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      logLevel: 'silent',
      plugins: plugin ? [directImports(src)] : [],
    })
    return out.outputFiles[0]?.text ?? ''
  }

  it("an import of one file's names through the index loads that file alone, aliases and types kept", async () => {
    const plain = await bundle('only-circle.ts', false)
    expect(plain, "esbuild keeps the façade's other files").to.include('SQUARE-LOADED')
    const direct = await bundle('only-circle.ts', true)
    expect(direct).to.include('CIRCLE-CODE').and.not.include('SQUARE-LOADED').and.not.include('STAR-LOADED')
    expect(direct).to.match(/RADIUS/)
  })

  it('a name the index re-exports only through `export *` leaves the import as written', async () => {
    const direct = await bundle('star.ts', true)
    expect(direct).to.include('STAR-CODE').and.include('SQUARE-LOADED')
  })
})
