/** swtpm on a unix socket (`tpm: {swtpm: unix:/path}`), as mini's nodes use it: only its owner connects. */
import { chmod } from 'node:fs/promises'
import path from 'node:path'
import { readPcrs } from '../../src/lib/tpm/index.js'
import { TpmUnavailableError } from '../../src/lib/tpm/errors.js'
import { openTpmFromConfig } from '../../src/wiring/node.js'
import { connectAsNobody } from '../support/as-nobody.js'
import { expect } from '../support/chai.js'
import { startSwtpmOnSocket, type SocketSwtpmHandle } from '../support/swtpm.js'
import { makeTempDir } from '../support/temp.js'

describe('swtpm on a unix socket', () => {
  let dir: string
  let cleanup: () => Promise<void>
  let swtpm: SocketSwtpmHandle | undefined
  beforeEach(async () => {
    ;({ dir, cleanup } = await makeTempDir())
    await chmod(dir, 0o755)
    swtpm = undefined
  })
  afterEach(async () => {
    await swtpm?.stop()
    await cleanup()
  })

  it('the node config names it as unix:/path: quotes work for its owner, another user is refused', async () => {
    swtpm = await startSwtpmOnSocket(dir)
    const { server, ctrl } = swtpm
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
