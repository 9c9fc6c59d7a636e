/**
 * bin/code-cache.js: init's bundle runs with V8's code cache, and any cache that does not belong to
 * the bundle's bytes (or that V8 refuses) only costs the compile, never the result. The loader also
 * imports the ES-module-only packages a bundle needs (a vm script cannot import() on Node 20).
 */
import { execFile } from 'node:child_process'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
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

/** A run of a training command (as bin/run.js loads `init`): calls `call` on the exports, exits with `code`. */
async function trainingRun(file: string, call: string, code = 0): Promise<{ trainedRuns: number }> {
  const script = `const r = require(${JSON.stringify(CODE_CACHE)}).loadWithCodeCache(process.argv[1], { train: true });
    r.exports.${call}();
    process.stdout.write(JSON.stringify({ trainedRuns: r.trainedRuns }));
    process.exitCode = ${code}`
  const out = await run(process.execPath, ['-e', script, file]).catch(
    (e: { stdout: string; code: number }) => {
      if (e.code !== code) throw e
      return e
    },
  )
  return JSON.parse(out.stdout) as { trainedRuns: number }
}

/** The cache file's runs byte (after the bundle's SHA-256) and its size. */
async function cacheState(file: string): Promise<{ runs: number; bytes: Buffer }> {
  const bytes = await readFile(`${file}.cache`)
  return { runs: bytes[32] ?? NaN, bytes }
}

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

  describe('training: the first runs that exit 0 write the cache again with what they compiled', () => {
    beforeEach(async () => {
      // f0…f199 are compiled by the top level; only a call of later() compiles g0…g199
      const later = Array.from({ length: 200 }, (_, i) => `function g${i}(x) { return x * ${i} }`).join('\n')
      const sum = Array.from({ length: 200 }, (_, i) => `g${i}(1)`).join(' + ')
      const other = `function other() { return [${Array.from({ length: 50 }, (_, i) => `(() => ${i})()`).join(', ')}] }`
      await writeFile(
        bundle,
        `${later}\n${other}\nmodule.exports = { later: () => ${sum}, other, none: () => 0 }\n`,
      )
      await writeCache(bundle)
    })

    it('a run that exits 0 writes a cache holding the functions it called; V8 takes it', async () => {
      const built = await cacheState(bundle)
      expect(built.runs, "the build's cache").to.equal(0)
      expect(await trainingRun(bundle, 'later')).to.deep.equal({ trainedRuns: 0 })
      const trained = await cacheState(bundle)
      expect(trained.runs).to.equal(1)
      expect(trained.bytes.length, 'g0…g199 compiled').to.be.greaterThan(built.bytes.length + 2000)
      expect(trained.bytes.subarray(0, 32)).to.deep.equal(built.bytes.subarray(0, 32))
      expect(await load(bundle)).to.deep.include({ cache: 'used' })
    })

    it("holds the code, not the run's data: a secret the run made is not in it", async () => {
      // what a training run of init holds when it exits: the master secret in closures and globals
      await writeFile(
        bundle,
        `const { randomBytes } = require('node:crypto')
        module.exports = { keepSecret() {
          const secret = randomBytes(24).toString('hex')
          globalThis.kept = { secret, bytes: Buffer.from(secret, 'hex'), reveal: () => secret }
          return secret
        } }\n`,
      )
      await writeCache(bundle)
      const script = `const r = require(${JSON.stringify(CODE_CACHE)}).loadWithCodeCache(process.argv[1], { train: true });
        process.stdout.write(r.exports.keepSecret())`
      const { stdout: secret } = await run(process.execPath, ['-e', script, bundle])
      const trained = await cacheState(bundle)
      expect(trained.runs).to.equal(1)
      expect(secret).to.match(/^[0-9a-f]{48}$/)
      expect(trained.bytes.includes(Buffer.from(secret))).to.be.false
      expect(trained.bytes.includes(Buffer.from(secret, 'hex'))).to.be.false
    })

    it('a run that fails leaves the cache as it was', async () => {
      const built = await cacheState(bundle)
      await trainingRun(bundle, 'later', 1)
      expect((await cacheState(bundle)).bytes).to.deep.equal(built.bytes)
    })

    it('keeps what earlier runs compiled, and stops after three runs', async () => {
      await trainingRun(bundle, 'later')
      const afterLater = (await cacheState(bundle)).bytes.length
      expect(await trainingRun(bundle, 'none')).to.deep.equal({ trainedRuns: 1 })
      const second = await cacheState(bundle)
      expect(second.runs).to.equal(2)
      expect(second.bytes.length, 'the first run’s g0…g199 kept').to.be.at.least(afterLater)
      await trainingRun(bundle, 'none')
      const third = await cacheState(bundle)
      expect(third.runs).to.equal(3)
      expect(await trainingRun(bundle, 'other')).to.deep.equal({ trainedRuns: 3 })
      expect((await cacheState(bundle)).bytes, 'a fourth run writes nothing').to.deep.equal(third.bytes)
    })

    it('a cache for other bytes is trained anew, from a count of zero', async () => {
      await writeFile(bundle, (await readFile(bundle, 'utf8')).replace('x * 1 ', 'x * 1.5 '))
      expect(await trainingRun(bundle, 'later')).to.deep.equal({ trainedRuns: 0 })
      expect(await load(bundle)).to.deep.include({ cache: 'used' })
      expect((await cacheState(bundle)).runs).to.equal(1)
    })

    it('where the cache cannot be written, the run ends as it would and leaves no partial file', async () => {
      // a directory in the cache's place: the rename fails as in a read-only dist/ (root ignores modes)
      await rm(`${bundle}.cache`)
      await mkdir(path.join(`${bundle}.cache`, 'occupied'), { recursive: true })
      expect(await trainingRun(bundle, 'later')).to.deep.equal({ trainedRuns: 0 })
      expect((await readdir(dir)).sort()).to.deep.equal(['bundle.cjs', 'bundle.cjs.cache'])
    })

    it("--write makes the build's cache from source, whatever trained cache lies there", async () => {
      await trainingRun(bundle, 'later')
      const trained = await cacheState(bundle)
      await writeCache(bundle)
      const rewritten = await cacheState(bundle)
      expect(rewritten.runs).to.equal(0)
      expect(rewritten.bytes.length, 'g0…g199 not in it').to.be.lessThan(trained.bytes.length - 2000)
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
