#!/usr/bin/env node
// CommonJS (bin/package.json), not an ES module: Node's ES-module loader alone costs ~7 ms of
// CPU at every start (a quarter of `node -e 0`), and `--version` and help pages need none of it.
// `--version` is answered before oclif loads: loading the framework alone costs about twice a bare
// node start, and version checks run in scripts and health probes. The text matches oclif's.
// Help pages come from dist/help-index.json, which the build renders with oclif's own Help class
// (scripts/gen-help-index.ts); they are printed here when oclif would print exactly that text.
// `bootstrap run` (the node daemon), the node's units, and `init` and `mini up` with plain flags
// also run without oclif: see src/bootstrap-run.ts, src/service-run.ts, src/init-run.ts and
// src/mini-run.ts; anything unusual still goes through oclif.
'use strict'
const { existsSync, readFileSync } = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const args = process.argv.slice(2)
// CommonJS bundles run with V8's code cache the build wrote beside them (bin/code-cache.js). The
// operator's commands train it with their first runs, and so does the bootstrapper, which ends
// with its node's init or join: its first three runs from a writable dist/ (mini's nodes, a node
// that reboots, an image build that runs it once) save the next ones ~6 ms of init. The node's
// long-running services do not train: by their exit the cache would have lost what they ran at
// start, whose bytecode V8 drops after hours.
const cached =
  (name, train = false) =>
  async () =>
    require('./code-cache.js').loadWithCodeCache(path.join(ROOT, `dist/${name}.cjs`), { train }).exports
const withoutFramework = {
  'bootstrap run': cached('bootstrap-run', true),
  init: cached('init-run', true),
  'mini up': cached('mini-run', true),
  joinservice: cached('service-run'),
  keyservice: cached('service-run'),
  verifyservice: cached('service-run'),
  'upgrade-agent': cached('service-run'),
  'state-disk setup': cached('service-run'),
}

if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  process.stdout.write(userAgent(pkg.oclif.bin, pkg.version) + '\n')
} else if (!printedIndexedHelp()) {
  void main()
}

async function main() {
  if (await ranWithoutFramework()) return
  // oclif would load semver on every start to compare Node with package.json's engines (~8 ms);
  // npm checks engines at install time.
  process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
  const { execute } = await import('../dist/cli.js')
  // the project's root, not this file: oclif takes the nearest package.json, here bin/'s
  await execute({ dir: ROOT })
}

function userAgent(bin, version) {
  return `${bin}/${version} ${process.platform}-${process.arch} node-${process.version}`
}

async function ranWithoutFramework() {
  const id = ['bootstrap', 'state-disk', 'mini'].includes(args[0]) ? `${args[0]} ${args[1]}` : args[0]
  const load = Object.hasOwn(withoutFramework, id) ? withoutFramework[id] : undefined
  if (!load) return false
  const { runWithoutFramework } = await load()
  return runWithoutFramework(args.slice(id.split(' ').length), id)
}

/** Prints the indexed page for a plain help request (`[help] [topic…] [command]`, `… --help`). */
function printedIndexedHelp() {
  const last = args.at(-1)
  const words =
    last === '--help' || last === '-h' ? args.slice(0, -1) : args[0] === 'help' ? args.slice(1) : args
  if (args.length > 0 && words === args) return false // not a help request (`constellation` alone is)
  if (words.some((w) => w.startsWith('-')) || !oclifWouldRenderPlain()) return false
  let index
  try {
    index = JSON.parse(readFileSync(path.join(ROOT, 'dist/help-index.json'), 'utf8'))
  } catch {
    return false // not built (bin/dev.mjs runs without it): oclif renders the page
  }
  const key = words.join(' ')
  if (!Object.hasOwn(index.pages, key)) return false
  process.stdout.write(index.pages[key].replaceAll(index.userAgent, userAgent(index.bin, index.version)))
  return true
}

/**
 * Whether oclif would render help as the index holds it: 80 columns and no colour (stdout is not a
 * terminal and nothing forces colour, as ansis decides), no user theme, no user-installed plugins.
 */
function oclifWouldRenderPlain() {
  const env = process.env
  if (process.stdout.isTTY || env.OCLIF_COLUMNS) return false
  const colourForced = [
    'FORCE_COLOR',
    'COLORTERM',
    'TF_BUILD',
    'TEAMCITY_VERSION',
    'CI',
    'PM2_HOME',
    'NEXT_RUNTIME',
  ]
  if (!env.NO_COLOR && colourForced.some((name) => name in env)) return false
  if (!env.HOME) return false // oclif then asks os.homedir(): leave that case to it
  const configDir =
    env.CONSTELLATION_CONFIG_DIR || `${env.XDG_CONFIG_HOME || `${env.HOME}/.config`}/constellation`
  const dataDir =
    env.CONSTELLATION_DATA_DIR || `${env.XDG_DATA_HOME || `${env.HOME}/.local/share`}/constellation`
  const themeOff = ['true', '1'].includes(env.CONSTELLATION_DISABLE_THEME)
  return (themeOff || !existsSync(`${configDir}/theme.json`)) && !existsSync(`${dataDir}/package.json`)
}
