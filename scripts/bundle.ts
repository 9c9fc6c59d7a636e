/**
 * Bundles src/ into dist/ with esbuild, in three builds:
 * - the CLI: one file per command (oclif loads them through the manifest) plus src/cli.ts, with
 *   shared code split into chunks. Node's ESM loader pays per file; loading init's ~400 modules one
 *   by one cost about 0.3 s.
 * - one self-contained file each for mini's long-lived processes, src/mini-node.ts,
 *   src/mini-metadata.ts and src/mini-simulator.ts. Chunks shared with the commands carried code
 *   only the commands use, and the domain façades pulled in everything any command imports through
 *   them (scripts/bundle-direct-imports.ts): a mini node's supervisor started with 2.8 MB of code
 *   for the 0.55 MB it runs.
 * - the framework-free entries of bin/run.js, one self-contained CommonJS file each, with V8's
 *   code cache beside it (bin/code-cache.js): `init` (the operator's wait), `bootstrap run` (every
 *   boot of every node), the node's units (service-run: a node starts up to five) and `mini up`. Node 20
 *   compiles every ES module at every start and cannot cache it; loaded with the cache, a unit's
 *   start costs ~105 ms less CPU, init's ~60 ms, the bootstrapper's ~45 ms.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { build, type BuildOptions } from 'esbuild'
import { asciiOnly } from './ascii-only.js'
import { directImports } from './bundle-direct-imports.js'

const outdir = process.argv[2]
if (!outdir) throw new Error('usage: tsx scripts/bundle.ts <outdir>')

const commands = readdirSync('src/commands', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => `src/commands/${f}`)

const shared: BuildOptions = {
  outdir,
  outbase: 'src',
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
  external: [
    // oclif's development mode (TypeScript sources) only; never reached from dist/.
    'typescript',
    'ts-node',
    // grpc-js requires it only to serve channelz/ORCA, which we never enable: ~260 kB less to parse.
    '@grpc/proto-loader',
    // Large and only used by `upgrade` and `bootstrap-data`: loaded from node_modules when needed.
    '@aws-sdk/*',
    '@kubernetes/client-node',
  ],
  // CommonJS dependencies call require() for Node built-ins and read __dirname; ESM has neither.
  banner: {
    js: [
      "import { createRequire as __cjsCreateRequire } from 'node:module';",
      "import { fileURLToPath as __cjsFileURLToPath } from 'node:url';",
      'const require = __cjsCreateRequire(import.meta.url);',
      'const __filename = __cjsFileURLToPath(import.meta.url);',
      "const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
    ].join(' '),
  },
}

await build({
  ...shared,
  entryPoints: ['src/cli.ts', ...commands],
  splitting: true,
})

await build({
  ...shared,
  entryPoints: ['src/mini-node.ts', 'src/mini-metadata.ts', 'src/mini-simulator.ts'],
  plugins: [directImports(path.resolve('src'))],
})

// CommonJS, which bin/run.js loads with V8's code cache: `import.meta.url` (paths.ts) is the
// bundle's own URL, and a vm script cannot import() on Node 20 (esbuild makes bundled ones require).
const CACHED_ENTRIES = ['init-run', 'bootstrap-run', 'service-run', 'mini-run']
await build({
  ...shared,
  entryPoints: Object.fromEntries(CACHED_ENTRIES.map((name) => [name, `src/${name}.ts`])),
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  banner: {
    js: [
      "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;",
      // the loader (bin/code-cache.js) imports ES-module-only packages for the bundle
      'const __importPackage = (name) => require.importPackage ? require.importPackage(name) : Promise.reject(new Error(`${__filename} imports ${name} through bin/code-cache.js, which did not load it`));',
    ].join(' '),
  },
  define: { 'import.meta.url': '__importMetaUrl' },
  plugins: [
    directImports(path.resolve('src'), { packageImportsVia: '__importPackage', external: shared.external }),
  ],
})
for (const name of CACHED_ENTRIES) {
  const bundle = path.join(outdir, `${name}.cjs`)
  const text = readFileSync(bundle, 'utf8')
  if (/\bimport\(/.test(text))
    throw new Error(
      `${bundle} calls import(), which a script loaded with V8's code cache cannot (bin/code-cache.js): bundle the module, or load it with require`,
    )
  writeFileSync(bundle, asciiOnly(text))
}

// V8's cache keeps the path it was made at for stack traces: scripts/build.sh writes the caches
// once the bundles are in dist/.
