/**
 * Bundles src/ into dist/ with esbuild: one file per command (oclif loads them through the
 * manifest) plus src/cli.ts and the framework-free src/bootstrap-run.ts, src/service-run.ts and src/init-run.ts for
 * bin/run.js, and src/mini-simulator.ts, src/mini-metadata.ts and src/mini-node.ts (processes of `mini`), with shared code
 * split into chunks. Node's ESM loader pays per file; loading init's ~400 modules one by one cost
 * about 0.3 s of every `constellation init`.
 */
import { readdirSync } from 'node:fs'
import { build } from 'esbuild'

const outdir = process.argv[2]
if (!outdir) throw new Error('usage: tsx scripts/bundle.ts <outdir>')

const commands = readdirSync('src/commands', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => `src/commands/${f}`)

await build({
  entryPoints: [
    'src/cli.ts',
    'src/bootstrap-run.ts',
    'src/init-run.ts',
    'src/service-run.ts',
    'src/mini-simulator.ts',
    'src/mini-metadata.ts',
    'src/mini-node.ts',
    ...commands,
  ],
  outdir,
  outbase: 'src',
  bundle: true,
  splitting: true,
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
})
