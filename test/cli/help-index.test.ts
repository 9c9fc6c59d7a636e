/**
 * bin/run.js prints help pages from dist/help-index.json (rendered at build time) instead of
 * loading oclif. These tests hold each page to oclif's own rendering of the same command line, and
 * check that every case the index cannot answer (colour, other widths, a user theme) still reaches
 * oclif. oclif's debug log (DEBUG=*) tells which path ran: the index path writes nothing to stderr.
 */
import { spawn } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { CLI, REPO_ROOT, throughOclifArgv, type CliResult } from '../support/cli.js'
import { withTempDir } from '../support/temp.js'

/** The environment without anything that makes oclif render in colour or at another width. */
function plainEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DEBUG: '*', ...extra }
  for (const name of ['FORCE_COLOR', 'COLORTERM', 'TF_BUILD', 'TEAMCITY_VERSION', 'CI', 'OCLIF_COLUMNS'])
    if (!(name in extra)) delete env[name]
  return env
}

function run(argv: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

const runCliWith = (args: string[], env: NodeJS.ProcessEnv) => run([CLI, ...args], env)

/** The same command line rendered by oclif, as bin/run.js did for every help request before. */
function runThroughOclif(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return run(throughOclifArgv(args), { ...env, DEBUG: undefined })
}

const PAGES: Record<string, string[]> = {
  'the root, bare': [],
  'the root, --help': ['--help'],
  'the root, -h': ['-h'],
  'the root, help': ['help'],
  'a topic': ['config', '--help'],
  'a topic through help': ['help', 'upgrade'],
  'a nested command': ['config', 'generate', '--help'],
  'a nested command, -h': ['upgrade', 'execute', '-h'],
  'a command through help': ['help', 'bootstrap-data', 'generate'],
  'a framework-free command': ['init', '--help'],
  'the daemon': ['bootstrap', 'run', '--help'],
  'a plugin command': ['autocomplete', '--help'],
  'the help command': ['help', '--help'],
}

describe('help from the prebuilt index', function () {
  this.timeout(60_000)

  for (const [name, args] of Object.entries(PAGES)) {
    it(`prints oclif's page: ${name}`, async () => {
      const env = plainEnv()
      const [fast, oclif] = [await runCliWith(args, env), await runThroughOclif(args, env)]
      expect(fast.stderr, 'the index path ran (oclif logs under DEBUG=*)').to.equal('')
      expect(fast.code).to.equal(0)
      expect(fast.stdout).to.equal(oclif.stdout)
      expect(oclif.code).to.equal(0)
    })
  }

  it('has a page for every command, alias and topic in the manifest', async () => {
    const index = JSON.parse(await readFile(path.join(REPO_ROOT, 'dist/help-index.json'), 'utf8')) as {
      pages: Record<string, string>
    }
    const manifest = JSON.parse(await readFile(path.join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, { aliases?: string[] }>
    }
    const ids = Object.entries(manifest.commands).flatMap(([id, c]) => [id, ...(c.aliases ?? [])])
    const topics = ids.flatMap((id) =>
      id
        .split(':')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join(':')),
    )
    for (const id of ['', ...ids, ...topics])
      expect(index.pages, id).to.have.property(id.replaceAll(':', ' '))
  })

  const LEFT_TO_OCLIF: Record<string, { args: string[]; env: NodeJS.ProcessEnv }> = {
    'colour forced': { args: ['--help'], env: { FORCE_COLOR: '1' } },
    'a CI environment (ansis colours it)': { args: ['config', '--help'], env: { CI: 'true' } },
    'another width': { args: ['config', 'generate', '--help'], env: { OCLIF_COLUMNS: '120' } },
    'an unknown command': { args: ['no-such-command', '--help'], env: {} },
    'a command with arguments': { args: ['config', 'generate', 'qemu', '--help'], env: {} },
  }
  for (const [name, { args, env }] of Object.entries(LEFT_TO_OCLIF)) {
    it(`leaves ${name} to oclif, with the same output`, async () => {
      const fast = await runCliWith(args, plainEnv(env))
      const oclif = await runThroughOclif(args, plainEnv(env))
      expect(fast.stderr, 'oclif ran').to.not.equal('')
      expect(fast.stdout).to.equal(oclif.stdout)
      expect(fast.code).to.equal(oclif.code)
    })
  }

  it('leaves a user theme to oclif', async () => {
    await withTempDir(async (dir) => {
      await mkdir(path.join(dir, 'constellation'))
      await writeFile(path.join(dir, 'constellation/theme.json'), JSON.stringify({ sectionHeader: 'red' }))
      const env = plainEnv({ XDG_CONFIG_HOME: dir, FORCE_COLOR: '1' })
      const fast = await runCliWith(['--help'], env)
      expect(fast.stderr, 'oclif ran').to.not.equal('')
      expect(fast.stdout).to.equal((await runThroughOclif(['--help'], env)).stdout)
      expect(fast.stdout).to.include('\u001b[31m') // red: the theme applied
    })
  })
})
