#!/usr/bin/env node
// `--version` is answered before oclif loads: loading the framework alone costs about twice a bare
// node start, and version checks run in scripts and health probes. The text matches oclif's.
// `bootstrap run` (the node daemon), the node's services and `init` with plain flags also run
// without oclif: see src/bootstrap-run.ts, src/service-run.ts and src/init-run.ts; help and anything
// unusual still go through oclif.
const args = process.argv.slice(2)
const withoutFramework = {
  'bootstrap run': () => import('../dist/bootstrap-run.js'),
  init: () => import('../dist/init-run.js'),
  joinservice: () => import('../dist/service-run.js'),
  keyservice: () => import('../dist/service-run.js'),
  verifyservice: () => import('../dist/service-run.js'),
  'upgrade-agent': () => import('../dist/service-run.js'),
}

if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const { readFileSync } = await import('node:fs')
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(
    `${pkg.oclif.bin}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`,
  )
} else if (!(await ranWithoutFramework())) {
  // oclif would load semver on every start to compare Node with package.json's engines (~8 ms);
  // npm checks engines at install time.
  process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
  const { execute } = await import('../dist/cli.js')
  await execute({ dir: import.meta.url })
}

async function ranWithoutFramework() {
  const id = args[0] === 'bootstrap' ? `bootstrap ${args[1]}` : args[0]
  const load = Object.hasOwn(withoutFramework, id) ? withoutFramework[id] : undefined
  if (!load) return false
  const { runWithoutFramework } = await load()
  return runWithoutFramework(args.slice(id.split(' ').length), id)
}
