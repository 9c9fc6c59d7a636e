#!/usr/bin/env node
// `--version` is answered before oclif loads: loading the framework alone costs about twice a bare
// node start, and version checks run in scripts and health probes. The text matches oclif's.
const args = process.argv.slice(2)
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const { readFileSync } = await import('node:fs')
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(
    `${pkg.oclif.bin}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`,
  )
} else {
  const { execute } = await import('../dist/cli.js')
  await execute({ dir: import.meta.url })
}
