/** swtpm on a unix socket (`tpm: {swtpm: unix:/path}`), as mini's nodes use it: only its owner connects. */
import { spawn, type ChildProcess } from 'node:child_process'
import { chmod, mkdir } from 'node:fs/promises'
import { connect } from 'node:net'
import path from 'node:path'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { TpmUnavailableError } from '../../src/lib/tpm/errors.js'
import { openTpmFromConfig } from '../../src/wiring/node.js'
import { connectAsNobody } from '../support/as-nobody.js'
import { expect } from '../support/chai.js'
import { eventually } from '../support/eventually.js'
import { makeTempDir } from '../support/temp.js'

describe('swtpm on a unix socket', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let swtpm: ChildProcess | undefined
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    await chmod(dir, 0o755)
    swtpm = undefined
  })
  afterEach(async () => {
    if (swtpm && swtpm.exitCode === null) {
      const exited = new Promise((resolve) => swtpm!.once('exit', resolve))
      swtpm.kill('SIGKILL')
      await exited
    }
    await cleanup()
  })

  /** swtpm's command and control channels as 0600 sockets in a 0700 folder, as mini starts it. */
  async function startSocketSwtpm(): Promise<{ server: string; ctrl: string }> {
    const sockets = path.join(dir, 'node')
    await mkdir(path.join(sockets, 'tpm'), { recursive: true, mode: 0o700 })
    const server = path.join(sockets, 'swtpm.sock')
    const ctrl = path.join(sockets, 'swtpm-ctrl.sock')
    // prettier-ignore
    swtpm = spawn('swtpm', [
      'socket', '--tpm2',
      '--server', `type=unixio,path=${server},mode=0600`,
      '--ctrl', `type=unixio,path=${ctrl},mode=0600`,
      '--tpmstate', `dir=${path.join(sockets, 'tpm')}`,
      '--flags', 'not-need-init,startup-clear',
    ], { stdio: 'ignore' })
    await eventually(
      'swtpm accepting on its socket',
      () =>
        new Promise<true | undefined>((resolve) => {
          const s = connect({ path: server }, () => (s.destroy(), resolve(true)))
          s.once('error', () => resolve(undefined))
        }),
    )
    return { server, ctrl }
  }

  it('the node config names it as unix:/path: quotes work for its owner, another user is refused', async () => {
    const { server, ctrl } = await startSocketSwtpm()
    const open = openTpmFromConfig({ swtpm: `unix:${server}` })
    expect((await readPcrs(open, [15])).get(15)).to.deep.equal(Buffer.alloc(32))
    expect(process.getuid?.(), 'acting as user nobody needs root (CI runs as root)').to.equal(0)
    expect(await connectAsNobody(`unix:${server}`)).to.equal('EACCES')
    expect(await connectAsNobody(`unix:${ctrl}`)).to.equal('EACCES')
  })

  it('nothing listening there is a setup error naming the socket', async () => {
    const socket = path.join(dir, 'swtpm.sock')
    const err = await readPcrs(openTpmFromConfig({ swtpm: `unix:${socket}` }), [0]).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(TpmUnavailableError).with.property('exitCode', 1)
    expect((err as Error).message).to.equal(`connecting to swtpm at unix:${socket}`)
  })
})
