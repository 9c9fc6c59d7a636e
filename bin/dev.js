#!/usr/bin/env -S node --import tsx
// Development entry: runs the TypeScript sources in src/ through tsx, no build needed. oclif is
// pointed at src/commands directly (its own dist→src mapping cannot register tsx 4 here).
import { readFileSync } from 'node:fs'
import { Config, run, flush, handle } from '@oclif/core'

const root = new URL('..', import.meta.url).pathname
const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
pjson.oclif.commands = './src/commands'
try {
  const config = await Config.load({ root, pjson, isRoot: true, ignoreManifest: true })
  await run(process.argv.slice(2), config)
  await flush()
} catch (err) {
  await handle(err)
}
