/**
 * The guest-agent client against a stand-in for qemu-ga on a unix socket (the real one runs only in
 * a VM: test/e2e/mini-vm.test.ts): it syncs past what an earlier client left unread, runs a command
 * and returns its exit code and output once guest-exec-status says it exited.
 */
import { createServer, type Server } from 'node:net'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { guestExec } from '../../src/lib/vm/guest-agent.js'

/** A qemu-ga stand-in: answers sync with its id, runs nothing, reports `exit` after two polls. */
function fakeGuestAgent(socketPath: string, exit: { code: number; out: string }, seen: string[][]) {
  const server = createServer((socket) => {
    // what an earlier client's request left on the port
    socket.write('{"return": {"pid": 1}}\n')
    let buffer = ''
    let polls = 0
    socket.on('data', (chunk) => {
      buffer += chunk.toString()
      let nl: number
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const req = JSON.parse(buffer.slice(0, nl)) as { execute: string; arguments: Record<string, unknown> }
        buffer = buffer.slice(nl + 1)
        const reply = (value: unknown) => socket.write(JSON.stringify({ return: value }) + '\n')
        if (req.execute === 'guest-sync-delimited')
          socket.write(
            Buffer.concat([
              Buffer.from([0xff]),
              Buffer.from(JSON.stringify({ return: req.arguments.id }) + '\n'),
            ]),
          )
        else if (req.execute === 'guest-exec') {
          seen.push([req.arguments.path as string, ...(req.arguments.arg as string[])])
          reply({ pid: 42 })
        } else if (req.execute === 'guest-exec-status')
          reply(
            ++polls < 2
              ? { exited: false }
              : { exited: true, exitcode: exit.code, 'out-data': Buffer.from(exit.out).toString('base64') },
          )
      }
    })
  })
  return new Promise<Server>((resolve) => server.listen(socketPath, () => resolve(server)))
}

describe('vm: guest agent client', () => {
  let tmp: TempDir
  let server: Server | undefined
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(async () => {
    await new Promise((r) => (server ? server.close(r) : r(undefined)))
    await tmp.cleanup()
  })

  const cases: Record<string, { code: number; out: string }> = {
    'returns output and exit code 0': { code: 0, out: 'active\n' },
    'returns a failing exit code as it is': { code: 3, out: 'inactive\n' },
  }
  for (const [name, exit] of Object.entries(cases))
    it(name, async () => {
      const socket = path.join(tmp.dir, 'qga.sock')
      const seen: string[][] = []
      server = await fakeGuestAgent(socket, exit, seen)
      const got = await guestExec(socket, ['systemctl', 'is-active', 'x'])
      expect(got).to.deep.equal({ exitCode: exit.code, stdout: exit.out, stderr: '' })
      expect(seen).to.deep.equal([['systemctl', 'is-active', 'x']])
    })
})
