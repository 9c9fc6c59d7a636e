import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { REPO_ROOT } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { requestTsmReport } from '../../src/lib/tsm/index.js'

const HOST = path.join(REPO_ROOT, 'src/lib/cvm-standin/index.ts')

/** The host in a child process, with a fake produce standing in for the SNP signer. */
function startHost(dir: string): { child: ChildProcess; lines: () => Record<string, unknown>[] } {
  const script = `
    import { hostConfigfsTsmStandIn } from ${JSON.stringify(HOST)}
    await hostConfigfsTsmStandIn({
      dir: ${JSON.stringify(dir)},
      provider: 'sev_guest',
      produce: async (inblob) => ({ outblob: Buffer.concat([Buffer.from('snp:'), inblob]) }),
    })`
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const lines = () =>
    stderr
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  return { child, lines }
}

describe('cvm-standin: configfs-tsm stand-in host process', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let child: ChildProcess | undefined
  beforeEach(async () => (tmp = await makeTempDir('constell-tsm-host-')))
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
    child = undefined
    await tmp.cleanup()
  })

  it('serves requests from another process, logs JSON lines, and stops cleanly on SIGTERM', async () => {
    const host = startHost(tmp.dir)
    child = host.child
    const exited = once(child, 'exit')
    await eventually('the host serving', async () =>
      host.lines().find((l) => String(l.msg).startsWith('serving')),
    )
    const inblob = randomBytes(64)
    const got = await requestTsmReport({ root: tmp.dir, inblob, provider: 'sev_guest' })
    expect(got.outblob).to.deep.equal(Buffer.concat([Buffer.from('snp:'), inblob]))
    child.kill('SIGTERM')
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null]
    expect({ code, signal }).to.deep.equal({ code: 0, signal: null })
    const msgs = host.lines().map((l) => l.msg)
    expect(msgs[0]).to.match(/^serving a configfs-tsm stand-in \(TEST DOUBLE/)
    expect(msgs).to.include('inputs taken')
    expect(msgs.at(-1)).to.equal('stopped')
    expect(host.lines().every((l) => l.component?.toString().startsWith('configfs-tsm-standin'))).to.equal(
      true,
    )
    expect(await readdir(tmp.dir)).to.deep.equal([])
  })
})
