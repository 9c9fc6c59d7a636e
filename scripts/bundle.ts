/**
 * Bundles src/ into dist/ with esbuild, in two builds:
 * - the CLI: one file per command (oclif loads them through the manifest) plus src/cli.ts and the
 *   framework-free src/service-run.ts for bin/run.js, with shared code split into chunks. Node's
 *   ESM loader pays per file; loading init's ~400 modules one by one cost about 0.3 s.
 * - one self-contained file each for the node's long-lived processes, src/bootstrap-run.ts (every
 *   boot of every node) and mini's src/mini-node.ts, src/mini-metadata.ts and src/mini-simulator.ts,
 *   and for src/init-run.ts (`constellation init`: its start is the operator's wait). Chunks shared
 *   with the commands carried code only the commands use, and the domain façades pulled in
 *   everything any command imports through them (scripts/bundle-direct-imports.ts): a mini node's
 *   supervisor started with 2.8 MB of code for the 0.55 MB it runs, and init's start cost ~55 ms
 *   more CPU from chunks than from one file.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { build, type BuildOptions } from 'esbuild'
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
  entryPoints: ['src/cli.ts', 'src/service-run.ts', ...commands],
  splitting: true,
})

await build({
  ...shared,
  entryPoints: ['src/bootstrap-run.ts', 'src/mini-node.ts', 'src/mini-metadata.ts', 'src/mini-simulator.ts'],
  plugins: [directImports(path.resolve('src'))],
})

// init as CommonJS, which bin/run.js loads with V8's code cache (bin/code-cache.js): ESM has no
// cache before Node 22. Its `import.meta.url` (paths.ts) is the bundle's own URL.
await build({
  ...shared,
  entryPoints: { 'init-run': 'src/init-run.ts' },
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  banner: { js: "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__importMetaUrl' },
  plugins: [directImports(path.resolve('src'))],
})
const initBundle = path.join(outdir, 'init-run.cjs')
if (/\bimport\(/.test(readFileSync(initBundle, 'utf8')))
  throw new Error(
    `${initBundle} calls import(), which a script loaded with V8's code cache cannot (bin/code-cache.js): bundle the module, or load it with require`,
  )
execFileSync(process.execPath, ['bin/code-cache.js', '--write', initBundle], { stdio: 'inherit' })
