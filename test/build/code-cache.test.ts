/**
 * bin/code-cache.js: init's bundle runs with V8's code cache, and any cache that does not belong to
 * the bundle's bytes (or that V8 refuses) only costs the compile, never the result. The loader also
 * imports the ES-module-only packages a bundle needs (a vm script cannot import() on Node 20).
 */
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect } from '../support/chai.js'
import { makeTempDir } from '../support/temp.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const CODE_CACHE = path.join(ROOT, 'bin/code-cache.js')
const run = promisify(execFile)

/** Loads `file` in a fresh node (as bin/run.js does) and reports what V8 did with the cache. */
async function load(file: string): Promise<{ cache: string; exports: unknown; names: string[] }> {
  const script = `const r = require(${JSON.stringify(CODE_CACHE)}).loadWithCodeCache(process.argv[1]);
    process.stdout.write(JSON.stringify({ cache: r.cache, exports: r.exports, names: Object.keys(r.exports) }))`
  const { stdout } = await run(process.execPath, ['-e', script, file])
  return JSON.parse(stdout) as { cache: string; exports: unknown; names: string[] }
}

const writeCache = (file: string) => run(process.execPath, [CODE_CACHE, '--write', file])

describe('V8 code cache for bundles (bin/code-cache.js)', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let bundle: string
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    bundle = path.join(dir, 'bundle.cjs')
    const body = Array.from({ length: 200 }, (_, i) => `function f${i}(x) { return x + ${i} }`).join('\n')
    await writeFile(bundle, `${body}\nmodule.exports = { sum: f199(1), dir: __dirname, file: __filename }\n`)
  })
  afterEach(() => cleanup())

  it('runs a bundle as require would, and V8 uses the cache the build wrote', async () => {
    expect(await load(bundle)).to.deep.include({ cache: 'none', exports: { sum: 200, dir, file: bundle } })
    await writeCache(bundle)
    expect(await load(bundle)).to.deep.include({ cache: 'used', exports: { sum: 200, dir, file: bundle } })
  })

  it('does not offer V8 a cache made for other bytes (the bundle rebuilt, the cache not)', async () => {
    await writeCache(bundle)
    await writeFile(bundle, (await readFile(bundle, 'utf8')).replace('f199(1)', 'f199(2)'))
    expect(await load(bundle)).to.deep.include({ cache: 'none', exports: { sum: 201, dir, file: bundle } })
  })

  it('runs from source when V8 refuses the cache (another Node, a damaged file)', async () => {
    await writeCache(bundle)
    const cache = await readFile(`${bundle}.cache`)
    cache.fill(0x5a, 32 + 8) // the hash still matches; V8's own checks do not
    await writeFile(`${bundle}.cache`, cache)
    expect(await load(bundle)).to.deep.include({
      cache: 'rejected',
      exports: { sum: 200, dir, file: bundle },
    })
  })

  it('imports an ES module for the bundle, which a vm script cannot import() itself', async () => {
    // what the build makes of a cached bundle's import() of a package (scripts/bundle.ts)
    const esm = path.join(dir, 'only-esm.mjs')
    await writeFile(esm, "export const kind = 'an ES module'\n")
    await writeFile(
      bundle,
      `require.importPackage(${JSON.stringify(esm)}).then((m) => process.stdout.write(m.kind))\n`,
    )
    const { stdout, stderr } = await run(process.execPath, [
      '-e',
      `require(${JSON.stringify(CODE_CACHE)}).loadWithCodeCache(process.argv[1])`,
      bundle,
    ])
    expect(stdout).to.equal('an ES module')
    expect(stderr, 'no experimental-feature warning').to.equal('')
  })

  it("the build routes mini-run's import of @kubernetes/client-node through the loader", async () => {
    const text = await readFile(path.join(ROOT, 'dist/mini-run.cjs'), 'utf8')
    expect(text).to.include('__importPackage("@kubernetes/client-node")')
    expect(text).to.not.match(/\bimport\(/)
  })

  it('a package the bundle takes in (listr2) is loaded from the bundle, under its code cache', async () => {
    const text = await readFile(path.join(ROOT, 'dist/init-run.cjs'), 'utf8')
    expect(text).to.not.include('__importPackage("listr2")')
    expect(text).to.match(/\bListr = class\b/)
  })

  it("a cached bundle's stack traces name it where it is, in dist/ (V8 keeps the path the cache was made at)", async () => {
    const script = `const r = require(${JSON.stringify(CODE_CACHE)}).loadWithCodeCache(process.argv[1]);
      let stack = ''
      const argv = new Proxy([], { get(t, k, r) { if (k === 'length') stack = new Error('probe').stack; return Reflect.get(t, k, r) } })
      r.exports.miniUpFlags(argv)
      process.stdout.write(JSON.stringify({ cache: r.cache, stack }))`
    const bundle = path.join(ROOT, 'dist/mini-run.cjs')
    const { stdout } = await run(process.execPath, ['-e', script, bundle])
    const { cache, stack } = JSON.parse(stdout) as { cache: string; stack: string }
    expect(cache).to.equal('used')
    expect(stack).to.include(`(${bundle}:`)
  })

  for (const entry of ['init-run', 'bootstrap-run', 'service-run', 'mini-run'])
    it(`the build writes ${entry}.cjs a cache V8 takes in a fresh node`, async () => {
      const loaded = await load(path.join(ROOT, `dist/${entry}.cjs`))
      expect(loaded.cache).to.equal('used')
      expect(loaded.names).to.include('runWithoutFramework')
    })

  it('--write without a file is a usage error', async () => {
    const err = await run(process.execPath, [CODE_CACHE]).catch((e: unknown) => e)
    expect(err).to.include({ code: 2 })
    expect((err as { stderr: string }).stderr).to.include('usage: node bin/code-cache.js --write')
  })
})
