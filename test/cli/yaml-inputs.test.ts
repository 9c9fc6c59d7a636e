/** Hostile YAML inputs through every command that reads one: a located error, exit 1, never 70. */
import { execFileSync } from 'node:child_process'
import { appendFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { runCli } from '../support/cli.js'
import { makeTempDir } from '../support/temp.js'

const LAUGHS = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]']
for (const [i, name] of ['b', 'c', 'd', 'e', 'f', 'g', 'h'].entries()) {
  LAUGHS.push(`${name}: &${name} [${Array(9).fill(`*${'abcdefg'[i]}`).join(', ')}]`)
}
const BOMB = LAUGHS.join('\n') + '\n'

describe('hostile YAML through the CLI', () => {
  let ws: { dir: string; cleanup: () => Promise<void> }
  let config: string
  beforeEach(async () => {
    ws = await makeTempDir()
    config = path.join(ws.dir, 'constellation-conf.yaml')
    const gen = await runCli(['config', 'generate', 'qemu', '-C', ws.dir])
    expect(gen.code, gen.stderr).to.equal(0)
  })
  afterEach(async () => ws.cleanup())

  const commands: Record<string, (dir: string) => { argv: string[]; file: string }> = {
    'config validate': (dir) => ({
      argv: ['config', 'validate', '-C', dir],
      file: 'constellation-conf.yaml',
    }),
    init: (dir) => ({ argv: ['init', '-C', dir, '--timeout', '5s'], file: 'constellation-conf.yaml' }),
    verify: (dir) => ({
      argv: ['verify', '-C', dir, '--node-endpoint', '127.0.0.1:1'],
      file: 'constellation-conf.yaml',
    }),
    'upgrade check': (dir) => ({
      argv: ['upgrade', 'check', '-C', dir, '--kubeconfig', path.join(dir, 'constellation-conf.yaml')],
      file: 'constellation-conf.yaml',
    }),
    'bootstrap run': (dir) => ({
      argv: ['bootstrap', 'run', '--config', path.join(dir, 'node.yaml')],
      file: 'node.yaml',
    }),
    'bootstrap-data generate': (dir) => ({
      argv: ['bootstrap-data', 'generate', '-f', path.join(dir, 'objects.yaml'), '-o', path.join(dir, 'out')],
      file: 'objects.yaml',
    }),
  }
  for (const [name, command] of Object.entries(commands)) {
    it(`${name}: an alias bomb is a located error (exit 1)`, async () => {
      const { argv, file } = command(ws.dir)
      await writeFile(path.join(ws.dir, file), BOMB)
      const res = await runCli(argv)
      expect(res.code, res.stderr).to.equal(1)
      expect(res.stderr).to.match(new RegExp(`${file}:\\d+:\\d+: .*alias bomb`))
    })
  }

  it('config validate --json keeps the alias bomb as a structured problem', async () => {
    await writeFile(config, BOMB)
    const res = await runCli(['config', 'validate', '-C', ws.dir, '--json'])
    expect(res.code).to.equal(1)
    const body = JSON.parse(res.stdout) as { files: Array<{ problems: Array<Record<string, unknown>> }> }
    expect(body.files[0]?.problems[0]).to.include({ file: config, line: 6, col: 8, path: 'f[0]' })
  })

  it('a FIFO as the config is refused at once, not waited on', async () => {
    await rm(config)
    execFileSync('mkfifo', [config])
    const res = await runCli(['config', 'validate', '-C', ws.dir])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.contain(`config ${config} is not a regular file (it is a FIFO)`)
  })

  it('a config over 1 MiB is refused with its size and the limit', async () => {
    await writeFile(config, '#'.repeat(1024 * 1024 + 1))
    const res = await runCli(['config', 'validate', '-C', ws.dir])
    expect(res.code).to.equal(1)
    expect(res.stderr).to.contain(`is too large: 1048577 bytes, the limit is 1048576 bytes`)
  })
  it('a FIFO as bootstrap-data input or as a values file is refused, not waited on', async () => {
    const fifo = path.join(ws.dir, 'fifo')
    execFileSync('mkfifo', [fifo])
    const input = await runCli(['bootstrap-data', 'generate', '-f', fifo, '-o', path.join(ws.dir, 'out')])
    expect(input.code).to.equal(1)
    expect(input.stderr).to.contain(`input ${fifo} is not a regular file (it is a FIFO)`)
    // one rule for every input (README, exit codes): a missing file is a failure (1), as a missing config is
    const missing = await runCli(['bootstrap-data', 'generate', '-f', path.join(ws.dir, 'nope.yaml')])
    expect(missing.code, 'a missing -f file is exit 1, as a missing config').to.equal(1)
    const noConfig = await runCli(['config', 'validate', '-C', path.join(ws.dir, 'no-workspace')])
    expect(noConfig.code, 'a missing config').to.equal(1)

    const chart = `{ name: x, chart: x, version: 1.0.0, namespace: x, valuesFile: ${fifo} }`
    await appendFile(config, `upgrade:\n  charts:\n    - ${chart}\n`)
    const values = await runCli(['upgrade', 'check', '-C', ws.dir, '--kubeconfig', config])
    expect(values.code, values.stderr).to.equal(1)
    expect(values.stderr).to.contain(`values file ${fifo} is not a regular file (it is a FIFO)`)
  })
})
