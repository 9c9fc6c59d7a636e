// Loads a CommonJS bundle of dist/ with V8's code cache: Node 20 compiles every module's source at
// every start and cannot cache it (module.enableCompileCache came in Node 22), and for `init` that
// compile and the lazy compiles of its start were about 90 ms of CPU. The build writes
// `<bundle>.cache` (scripts/build.sh runs this file with --write): the SHA-256 of the bundle, then
// V8's cache, made after the bundle's top level ran. A cache for other bytes is not offered to V8,
// and one V8 refuses (another Node, other V8 flags) only costs the compile it would have saved.
// A vm script cannot import() here (Node 20 asks for --experimental-vm-modules or warns), so the
// build refuses a bundle that would (scripts/bundle.ts); esbuild turns a bundled import() into
// require, and the build turns an import() of a package (an ES-module-only external, as
// @kubernetes/client-node) into a call of `require.importPackage`, which this loader provides.
'use strict'
const { createHash } = require('node:crypto')
const { readFileSync, writeFileSync } = require('node:fs')
const Module = require('node:module')
const path = require('node:path')
const vm = require('node:vm')

const HASH_BYTES = 32
/** Runs the bundle as Node would require it; `cache` says whether V8 took the cache. */
function loadWithCodeCache(file) {
  const bytes = readFileSync(file)
  const hash = createHash('sha256').update(bytes).digest()
  let cachedData
  try {
    const cache = readFileSync(`${file}.cache`)
    if (cache.subarray(0, HASH_BYTES).equals(hash)) cachedData = cache.subarray(HASH_BYTES)
  } catch {
    // no cache (a build without one): compile from source
  }
  const script = new vm.Script(Module.wrap(bytes.toString('utf8')), {
    filename: file,
    cachedData,
  })
  const module = { exports: {}, filename: file, id: file, loaded: false }
  const bundleRequire = Module.createRequire(file)
  // a bare package name resolves from here as from dist/: the same node_modules
  bundleRequire.importPackage = (name) => import(name)
  script
    .runInThisContext()
    .call(module.exports, module.exports, bundleRequire, module, file, path.dirname(file))
  module.loaded = true
  const cache = cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used'
  return { exports: module.exports, cache, script, hash }
}

/** Writes `<file>.cache` from a load of the bundle in this process. */
function writeCodeCache(file) {
  const { script, hash } = loadWithCodeCache(file)
  writeFileSync(`${file}.cache`, Buffer.concat([hash, script.createCachedData()]))
}

module.exports = { loadWithCodeCache, writeCodeCache }

if (require.main === module) {
  const [flag, file] = process.argv.slice(2)
  if (flag !== '--write' || !file) {
    process.stderr.write('usage: node bin/code-cache.js --write dist/<bundle>.cjs\n')
    process.exit(2)
  }
  writeCodeCache(path.resolve(file))
  process.exit(0) // whatever the bundle's top level set going, the cache is written
}
