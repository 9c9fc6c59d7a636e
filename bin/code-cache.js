// Loads a CommonJS bundle of dist/ with V8's code cache: Node 20 compiles every module's source at
// every start and cannot cache it (module.enableCompileCache came in Node 22), and for `init` that
// compile and the lazy compiles of its start were about 90 ms of CPU. The build writes
// `<bundle>.cache` (scripts/build.sh runs this file with --write): the SHA-256 of the bundle, a byte
// counting the runs that trained it, then V8's cache, made after the bundle's top level ran. A cache
// for other bytes is not offered to V8, and one V8 refuses (another Node, other V8 flags) only costs
// the compile it would have saved.
// The build's cache holds only what the top level compiled; every function a command calls later is
// compiled lazily at each start (for `init`, ~15 ms of the ~200 before the kubeconfig). So the
// first runs that end with exit code 0 (up to TRAINING_RUNS) write the cache again at exit, with
// every function compiled by then, including those the cache gave them: the runs train it. It is
// written beside the bundle, by a rename, and only where the bundle's own folder is writable (an
// installed, read-only dist/ keeps the build's cache): whoever can write it could write the bundle.
// A vm script cannot import() here (Node 20 asks for --experimental-vm-modules or warns), so the
// build refuses a bundle that would (scripts/bundle.ts); esbuild turns a bundled import() into
// require, and the build turns an import() of a package (an ES-module-only external, as
// @kubernetes/client-node) into a call of `require.importPackage`, which this loader provides.
'use strict'
const { createHash } = require('node:crypto')
const { readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs')
const Module = require('node:module')
const path = require('node:path')
const vm = require('node:vm')

const HASH_BYTES = 32
const HEADER_BYTES = HASH_BYTES + 1
/** Runs that write the cache again at their exit; the later ones find little left to add. */
const TRAINING_RUNS = 3

/**
 * Runs the bundle as Node would require it; `cache` says whether V8 took the cache. With `train`,
 * an exit with code 0 writes the cache again unless TRAINING_RUNS runs did already.
 */
function loadWithCodeCache(file, { train = false } = {}) {
  return load(file, { train, cacheFile: readCache(file) })
}

/** `<file>.cache`, or nothing (a build without one: compile from source). */
function readCache(file) {
  try {
    return readFileSync(`${file}.cache`)
  } catch {
    return undefined
  }
}

function load(file, { train, cacheFile }) {
  const bytes = readFileSync(file)
  const hash = createHash('sha256').update(bytes).digest()
  let cachedData
  let trainedRuns = 0
  if (cacheFile && cacheFile.length > HEADER_BYTES && cacheFile.subarray(0, HASH_BYTES).equals(hash)) {
    trainedRuns = cacheFile[HASH_BYTES]
    cachedData = cacheFile.subarray(HEADER_BYTES)
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
  // a cache V8 did not take trains from scratch
  const runs = cache === 'used' ? trainedRuns : 0
  if (train && runs < TRAINING_RUNS)
    process.once('exit', (code) => {
      if (code === 0) writeTrainedCache(file, { script, hash, runs: runs + 1 })
    })
  return { exports: module.exports, cache, script, hash, trainedRuns: runs }
}

function cacheBytes(script, hash, runs) {
  return Buffer.concat([hash, Buffer.of(runs), script.createCachedData()])
}

/** Replaces `<file>.cache` by a rename, so that a process starting meanwhile reads one whole file. */
function writeTrainedCache(file, { script, hash, runs }) {
  const partial = `${file}.cache.${process.pid}.partial`
  try {
    collectGarbage()
    writeFileSync(partial, cacheBytes(script, hash, runs), { mode: 0o644 })
    renameSync(partial, `${file}.cache`)
  } catch {
    // a read-only dist/ (an installed package) keeps the cache it has; an exit is no time to fail
    try {
      rmSync(partial, { force: true })
    } catch {
      // nothing was written, or nothing can be removed: either way nothing more to do
    }
  }
}

/**
 * A full collection before V8 serializes a trained cache: the serializer then reuses the pages the
 * run's garbage held rather than adding its own. A training run of the bootstrapper, which exits
 * right after its work, otherwise reached 77.8 MiB resident at exit, 4 MiB over its peak while
 * working (the goal is 80 MB); with it, 74. Node 20 has no call for a collection: the flag that
 * exposes one is set for the lookup and cleared again, so that the cache carries the flags the
 * process started with (V8 refuses a cache made under other flags).
 */
function collectGarbage() {
  if (typeof globalThis.gc === 'function') return globalThis.gc() // started with --expose-gc
  const v8 = require('node:v8')
  let gc
  v8.setFlagsFromString('--expose-gc')
  try {
    gc = vm.runInNewContext('gc')
  } finally {
    v8.setFlagsFromString('--no-expose-gc')
  }
  gc()
}

/** Writes `<file>.cache` from a load of the bundle from source in this process: the build's, untrained. */
function writeCodeCache(file) {
  const { script, hash } = load(file, { train: false, cacheFile: undefined })
  writeFileSync(`${file}.cache`, cacheBytes(script, hash, 0))
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
