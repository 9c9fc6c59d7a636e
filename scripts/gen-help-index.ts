/**
 * Writes <outdir>/help-index.json: every help page oclif prints for this CLI (the root, each
 * topic, each command and alias), rendered by oclif's own Help class from the command manifest,
 * for bin/run.js to print without loading the framework (issue 34: loading oclif and its plugins
 * cost about 1.2× a bare node start). The pages are oclif's non-terminal rendering: 80 columns,
 * no colour, no user theme; bin/run.js prints them only when oclif would render exactly that.
 */
import { renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { format } from 'node:util'

const outdir = process.argv[2]
if (!outdir) throw new Error('usage: tsx scripts/gen-help-index.ts <outdir>')

// oclif and ansis read these when they load: what a pipe on a machine without colour settings gets.
process.env.OCLIF_COLUMNS = '80'
process.env.NO_COLOR = '1'
delete process.env.FORCE_COLOR
process.env.CONSTELLATION_DISABLE_THEME = 'true'
const { Config, Help } = await import('@oclif/core')

class CapturingHelp extends Help {
  text = ''
  protected override log(...args: string[]): void {
    this.text += format(...args) + '\n' // what ux.stdout's console.log writes
  }
}

const load = () => Config.load({ root: path.resolve(outdir, '..'), userPlugins: false })
// A fresh Config for each page, as each CLI process has: rendering a command's help changes the
// loaded command objects, and a page rendered after it (`help --help`) would list nested commands.
const render = async (words: string[]): Promise<string> => {
  const config = await load()
  const help = new CapturingHelp(config, config.pjson.oclif.helpOptions ?? config.pjson.helpOptions)
  await help.showHelp([...words, '--help'])
  return help.text
}

const config = await load()
const keys = new Set([
  '',
  ...config.topics.map((t) => t.name),
  ...config.commands.flatMap((c) => [c.id, ...c.aliases]),
])
const pages: Record<string, string> = {}
for (const key of [...keys].sort()) {
  const words = key === '' ? [] : key.split(':')
  pages[words.join(' ')] = await render(words)
}
// The root page shows the user agent, which names the Node version that runs the CLI.
const index = { bin: config.bin, version: config.version, userAgent: config.userAgent, pages }
// renamed into place: a CLI starting meanwhile reads the old index or the new one, never half of one
const file = path.join(outdir, 'help-index.json')
writeFileSync(`${file}.tmp`, JSON.stringify(index))
renameSync(`${file}.tmp`, file)
