/**
 * bin/run.js starts `bootstrap run`, the node's units, `init` and `mini up` without oclif
 * (src/bootstrap-run.ts, src/service-run.ts, src/init-run.ts, src/mini-run.ts). These tests hold each pair of entries to one behaviour: same flags, same
 * output and exit code (success, failure, --json), help and usage errors from oclif, and bundles
 * that really leave the framework out.
 */
import { spawn } from 'node:child_process'
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Interfaces } from '@oclif/core'
import { DAEMON_FLAGS } from '../../src/bootstrap-run.js'
import BootstrapRun from '../../src/commands/bootstrap/run.js'
import Init from '../../src/commands/init.js'
import JoinService from '../../src/commands/joinservice.js'
import KeyService from '../../src/commands/keyservice.js'
import UpgradeAgent from '../../src/commands/upgrade-agent.js'
import StateDiskSetup from '../../src/commands/state-disk/setup.js'
import VerifyService from '../../src/commands/verifyservice.js'
import { FRAMEWORK_FREE_UNITS, SERVICE_FLAGS, STATE_DISK_FLAGS } from '../../src/service-run.js'
import { INIT_FLAGS } from '../../src/init-run.js'
import MiniUp from '../../src/commands/mini/up.js'
import { MINI_UP_FLAGS, MINI_UP_LIMITS, miniUpFlags } from '../../src/mini-run.js'
import { expect } from '../support/chai.js'
import { REPO_ROOT, runCli, throughOclifArgv, type CliResult } from '../support/cli.js'
import { withTempDir } from '../support/temp.js'
import { startDaemonProcess, startLocalNode } from '../support/local-node.js'

/** The same command line through oclif, the way bin/run.js runs every other command. */
function runThroughOclif(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, throughOclifArgv(args), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CONSTELL_NO_SPINNER: '1', ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** oclif's flag table in parseArgs' terms, to compare with the framework-free entry's. */
function asParseArgs(flags: Interfaces.FlagInput) {
  return Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [
      name,
      {
        type: f.type === 'boolean' ? 'boolean' : 'string',
        ...(f.char ? { short: f.char } : {}),
        default: f.default ?? (f.type === 'boolean' ? false : undefined),
      },
    ]),
  )
}

const staticImportClosure = async (entry: string, seen = new Set<string>()): Promise<Set<string>> => {
  if (seen.has(entry)) return seen
  seen.add(entry)
  const text = await readFile(entry, 'utf8')
  // esbuild writes static imports of chunks as `from "./chunk-X.js"`
  for (const m of text.matchAll(/^import\s[^;]*?from\s*"(\.{1,2}\/[^"]+)"/gm))
    await staticImportClosure(path.resolve(path.dirname(entry), m[1] ?? ''), seen)
  return seen
}

describe('framework-free entries (bin/run.js)', function () {
  this.timeout(180_000)

  // CommonJS for V8's code cache (bin/code-cache.js): one file each, no imports to follow
  for (const entry of ['bootstrap-run.cjs', 'init-run.cjs', 'service-run.cjs', 'mini-run.cjs']) {
    it(`dist/${entry} does not load oclif`, async () => {
      const loaded = await staticImportClosure(path.join(REPO_ROOT, `dist/${entry}`))
      const sources = await Promise.all([...loaded].map((f) => readFile(f, 'utf8')))
      // the walk read the entry's code
      expect(sources.some((s) => s.includes('// src/lib/errors/'))).to.equal(true)
      expect(sources.filter((s) => s.includes('node_modules/@oclif/core/'))).to.deep.equal([])
    })
  }

  describe('the node units (joinservice, keyservice, verifyservice, upgrade-agent, state-disk setup)', () => {
    const services = {
      joinservice: JoinService,
      keyservice: KeyService,
      verifyservice: VerifyService,
      'upgrade-agent': UpgradeAgent,
    }
    const commands = { ...services, 'state-disk setup': StateDiskSetup }
    it('are all framework-free, with the same flags as their oclif commands', () => {
      expect(FRAMEWORK_FREE_UNITS).to.have.members(Object.keys(commands))
      for (const command of Object.values(services))
        expect(Object.keys(SERVICE_FLAGS)).to.deep.equal(Object.keys(command.flags))
      // names and types, in order (parseArgs reads every non-boolean oclif flag as a string)
      expect(Object.entries(STATE_DISK_FLAGS).map(([name, f]) => [name, f.type])).to.deep.equal(
        Object.entries(StateDiskSetup.flags).map(([name, f]) => [
          name,
          f.type === 'boolean' ? 'boolean' : 'string',
        ]),
      )
    })

    it('leave help and unknown flags to oclif, and fail the same way on a missing config', async () => {
      const help = await runCli(['joinservice', '--help'])
      expect(help.code).to.equal(0)
      expect(help.stdout).to.include('USAGE')
      const unknown = await runCli(['keyservice', '--no-such-flag'])
      expect(unknown.code).to.equal(2)
      expect(unknown.stderr).to.match(/Nonexistent flag: --no-such-flag/)
      const stateDiskHelp = await runCli(['state-disk', 'setup', '--help'])
      expect(stateDiskHelp.code).to.equal(0)
      expect(stateDiskHelp.stdout).to.include('USAGE')
      const stateDiskUnknown = await runCli(['state-disk', 'setup', '--simulate-maping'])
      expect(stateDiskUnknown.code).to.equal(2)
      expect(stateDiskUnknown.stderr).to.match(/Nonexistent flag: --simulate-maping/)
      for (const unit of Object.keys(commands)) {
        const args = [...unit.split(' '), '--config', '/nonexistent/node-config.yaml']
        if (unit === 'state-disk setup') args.push('--simulate-mapping')
        const [free, oclif] = await Promise.all([runCli(args), runThroughOclif(args)])
        expect(free.code, unit).to.equal(oclif.code)
        expect(free.code, unit).to.not.equal(0)
        expect(free.stderr, unit).to.equal(oclif.stderr)
      }
    })
  })

  describe('bootstrap run', () => {
    it('reads the same flags as the oclif command', () => {
      expect(Object.keys(DAEMON_FLAGS)).to.deep.equal(Object.keys(BootstrapRun.flags))
    })

    it('leaves help and unknown flags to oclif', async () => {
      const help = await runCli(['bootstrap', 'run', '--help'])
      expect(help.code).to.equal(0)
      expect(help.stdout).to.include('USAGE').and.include('--config')
      const bad = await runCli(['bootstrap', 'run', '--confg', '/x'])
      expect(bad.code).to.equal(2)
      expect(bad.stderr).to.include('Nonexistent flag: --confg')
    })

    for (const [name, body] of [
      ['a missing node config', undefined],
      [
        'a node config with a bad key',
        'attestationVariant: qemu-vtpm\ntpm:\n  swtpm: 127.0.0.1:1\nbogus: 1\n',
      ],
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
          expect(bare).to.deep.equal(framework)
        })
      })
    }
  })

  describe('init', () => {
    it('reads the same flags, with the same defaults, as the oclif command (plus --json)', () => {
      expect(INIT_FLAGS).to.deep.equal({
        ...asParseArgs(Init.flags),
        json: { type: 'boolean', default: false },
      })
    })

    it('leaves help and unknown flags to oclif', async () => {
      const help = await runCli(['init', '--help'])
      expect(help.code).to.equal(0)
      expect(help.stdout).to.include('USAGE').and.include('--merge-kubeconfig')
      const bad = await runCli(['init', '--merge'])
      expect(bad.code).to.equal(2)
      expect(bad.stderr).to.include('Nonexistent flag: --merge')
    })

    const failures: Record<string, (dir: string) => string[]> = {
      'a missing workspace': (dir) => ['init', '-C', path.join(dir, 'none')],
      'a missing workspace, --json': (dir) => ['init', '-C', path.join(dir, 'none'), '--json'],
      'a bad --timeout (usage error)': (dir) => ['init', '-C', dir, '--timeout', 'soon'],
    }
    for (const [name, args] of Object.entries(failures)) {
      it(`reports ${name} exactly as oclif does`, async () => {
        await withTempDir(async (dir) => {
          const bare = await runCli(args(dir))
          const framework = await runThroughOclif(args(dir))
          expect(bare.code).to.be.oneOf([1, 2])
          expect(bare).to.deep.equal(framework)
        })
      })
    }

    for (const json of [false, true]) {
      it(`a successful init prints the same${json ? ' JSON' : ''} either way`, async () => {
        const runs = []
        for (const run of [runCli, runThroughOclif]) {
          const node = await startLocalNode()
          try {
            const daemon = await startDaemonProcess(node)
            // one workspace path for both runs, so that the outputs can be compared as they are
            const workspace = path.join(node.dir, 'ws-copy')
            await cp(node.workspace, workspace, { recursive: true })
            const res = await run(['init', '--skip-helm', '-C', workspace, ...(json ? ['--json'] : [])])
            await daemon.expectInitSucceeded(res)
            expect((await daemon.exited).code).to.equal(0)
            runs.push({ ...res, dir: node.dir })
          } finally {
            await node.stop()
          }
        }
        const normalized = runs.map((r) => ({
          code: r.code,
          stderr: r.stderr,
          stdout: r.stdout
            .replaceAll(r.dir, '<dir>')
            .replace(/[0-9a-f]{64}/g, '<cluster id>')
            .replace(/127\.0\.0\.1:\d+/g, '<endpoint>'),
        }))
        expect(normalized[0]?.code).to.equal(0)
        expect(normalized[0]?.stdout).to.include('<dir>/ws-copy/constellation-admin.conf')
        expect(normalized[0]).to.deep.equal(normalized[1])
      })
    }
  })
  describe('mini up', () => {
    it('reads the same flags as the oclif command (plus --json), within its limits and options', () => {
      const oclif = MiniUp.flags
      expect(Object.keys(MINI_UP_FLAGS)).to.deep.equal([...Object.keys(oclif), 'json'])
      for (const [name, f] of Object.entries(oclif)) {
        const free = MINI_UP_FLAGS[name as keyof typeof MINI_UP_FLAGS]
        expect(free.type, name).to.equal(f.type === 'boolean' ? 'boolean' : 'string')
        expect('short' in free ? free.short : undefined, name).to.equal(f.char)
        // oclif's default as parseArgs reads it (an integer as its digits); the attestation's is computed
        if (typeof f.default !== 'function')
          expect('default' in free ? free.default : undefined, name).to.equal(
            f.default === undefined ? (f.type === 'boolean' ? false : undefined) : String(f.default),
          )
        if ('options' in f && f.options)
          expect(MINI_UP_LIMITS[name as keyof typeof MINI_UP_LIMITS], name).to.deep.equal(f.options)
        const { min, max } = f as { min?: number; max?: number }
        if (min !== undefined)
          expect(MINI_UP_LIMITS[name as keyof typeof MINI_UP_LIMITS], name).to.deep.equal({ min, max })
      }
    })

    it('takes plain valid flags; leaves anything oclif must judge to oclif', () => {
      expect(miniUpFlags(['-C', 'ws', '--control-planes', '3', '--workers', '0', '--json'])).to.deep.include({
        workspace: 'ws',
        'control-planes': 3,
        workers: 0,
        attestation: 'tpm-ek',
        json: true,
      })
      expect(miniUpFlags(['--machines', 'vm'])).to.deep.include({ attestation: 'qemu-vtpm' })
      for (const argv of [
        ['--help'],
        ['--workers', '41'],
        ['--control-planes', '0'],
        ['--workers', '2x'],
        ['--workers', '-1'],
        ['--attestation', 'sev'],
        ['--network', 'bridge'],
        ['--machines', 'kvm'],
        ['--no-such-flag'],
        ['extra-argument'],
      ])
        expect(miniUpFlags(argv), argv.join(' ')).to.equal(undefined)
    })

    it('leaves help and bad values to oclif', async () => {
      const help = await runCli(['mini', 'up', '--help'])
      expect(help.code).to.equal(0)
      expect(help.stdout).to.include('USAGE').and.include('--control-planes')
      const bad = await runCli(['mini', 'up', '--workers', '41'])
      expect(bad.code).to.equal(2)
      expect(bad.stderr).to.include('Expected an integer less than or equal to 40')
    })

    const failures: Record<string, (dir: string) => string[]> = {
      'a cluster already running there': (dir) => ['mini', 'up', '-C', dir, '--skip-helm'],
      'a cluster already running there, --json': (dir) => ['mini', 'up', '-C', dir, '--json'],
      'a file as the workspace (usage error)': (dir) => ['mini', 'up', '-C', path.join(dir, 'file')],
      'a bad --timeout (usage error)': (dir) => [
        'mini',
        'up',
        '-C',
        path.join(dir, 'new'),
        '--timeout',
        'soon',
      ],
    }
    for (const [name, args] of Object.entries(failures)) {
      it(`reports ${name} exactly as oclif does`, async () => {
        await withTempDir(async (dir) => {
          await writeFile(path.join(dir, 'file'), 'not a folder')
          await mkdir(path.join(dir, 'constellation-mini'))
          await writeFile(
            path.join(dir, 'constellation-mini', 'mini.json'),
            JSON.stringify({
              version: 1,
              startedAt: '2026-11-29T08:00:00.000Z',
              network: { mode: 'loopback', id: 'abcdef', prefix: '127.1.2' },
              createdFiles: [],
              createdWorkspace: false,
              nodes: [],
              attestation: 'tpm-ek',
            }),
          )
          const bare = await runCli(args(dir))
          const framework = await runThroughOclif(args(dir))
          expect(bare.code).to.be.oneOf([1, 2])
          expect(bare).to.deep.equal(framework)
        })
      })
    }
  })
})
