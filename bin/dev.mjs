#!/usr/bin/env -S node --import tsx
// Development entry: runs the TypeScript sources in src/ through tsx, no build needed. oclif is
// pointed at src/commands directly (its own dist→src mapping cannot register tsx 4 here).
import { readFileSync } from 'node:fs'
import { Config, Plugin, run, flush, handle } from '@oclif/core'

const root = new URL('..', import.meta.url).pathname
const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
pjson.oclif.commands = './src/commands'
try {
  // The root plugin is built here so that it ignores oclif.manifest.json (written by the build,
  // it would hide commands added since). Plugins from node_modules are not loaded in dev mode.
  const plugin = new Plugin({ root, pjson, isRoot: true, ignoreManifest: true })
  await plugin.load()
  const config = await Config.load({ root, pjson, plugins: new Map([[plugin.name, plugin]]) })
  await run(process.argv.slice(2), config)
  await flush()
} catch (err) {
  await handle(err)
}
