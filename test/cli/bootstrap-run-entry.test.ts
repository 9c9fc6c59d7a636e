/**
 * bin/run.js starts `bootstrap run` without oclif (src/bootstrap-run.ts). These tests hold the two
 * entries to one behaviour: same flags, same error output and exit code, help and usage errors
 * from oclif, and a daemon bundle that really leaves the framework out.
 */
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { DAEMON_FLAGS } from '../../src/bootstrap-run.js'
import BootstrapRun from '../../src/commands/bootstrap/run.js'
import { expect } from '../support/chai.js'
import { CLI, REPO_ROOT, runCli, withTempDir, type CliResult } from '../support/cli.js'

/** The same command line through oclif, the way bin/run.js runs every other command. */
function runThroughOclif(args: string[]): Promise<CliResult> {
  const script = `const { execute } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist/cli.js'))});
await execute({ dir: ${JSON.stringify(new URL(`file://${CLI}`).href)}, args: ${JSON.stringify(args)} })`
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

describe('bootstrap run: the framework-free daemon entry', () => {
  it('reads the same flags as the oclif command', () => {
    expect(Object.keys(DAEMON_FLAGS)).to.deep.equal(Object.keys(BootstrapRun.flags))
  })

  it('leaves help to oclif', async () => {
    const res = await runCli(['bootstrap', 'run', '--help'])
    expect(res.code).to.equal(0)
    expect(res.stdout).to.include('USAGE').and.include('--config')
  })

  it('leaves unknown flags to oclif: a usage error, exit 2', async () => {
    const res = await runCli(['bootstrap', 'run', '--confg', '/x'])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.include('Nonexistent flag: --confg')
  })

  for (const [name, body] of [
    ['a missing node config', undefined],
    ['a node config with a bad key', 'attestationVariant: qemu-vtpm\ntpm:\n  swtpm: 127.0.0.1:1\nbogus: 1\n'],
  ] as const) {
    it(`reports ${name} exactly as oclif does`, async () => {
      await withTempDir(async (dir) => {
        const file = path.join(dir, 'node-config.yaml')
        if (body) await writeFile(file, body)
        const bare = await runCli(['bootstrap', 'run', '--config', file])
        const framework = await runThroughOclif(['bootstrap', 'run', '--config', file])
        expect(bare.code).to.equal(1)
        expect(bare.stderr).to.include(file)
        if (!body) expect(bare.stderr).to.include('Hint: pass --config with the node config file')
        expect({ code: bare.code, stderr: bare.stderr }).to.deep.equal({
          code: framework.code,
          stderr: framework.stderr,
        })
      })
    })
  }

  it('the daemon bundle does not load oclif', async () => {
    const loaded = await staticImportClosure(path.join(REPO_ROOT, 'dist/bootstrap-run.js'))
    const sources = await Promise.all([...loaded].map((f) => readFile(f, 'utf8')))
    expect(loaded.size).to.be.greaterThan(1)
    expect(sources.filter((s) => s.includes('node_modules/@oclif/core/'))).to.deep.equal([])
  })
})

/** Files a bundled ESM file imports statically (esbuild writes them as `from "./chunk-X.js"`). */
async function staticImportClosure(entry: string, seen = new Set<string>()): Promise<Set<string>> {
  if (seen.has(entry)) return seen
  seen.add(entry)
  const text = await readFile(entry, 'utf8')
  for (const m of text.matchAll(/^import\s[^;]*?from\s*"(\.{1,2}\/[^"]+)"/gm))
    await staticImportClosure(path.resolve(path.dirname(entry), m[1] ?? ''), seen)
  return seen
}
