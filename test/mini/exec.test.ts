/**
 * `mini exec`: a process-mode node's command runs in its root folder (its namespace in netns mode:
 * the e2e tests), with its exit code and output returned as they are; a VM node's goes to its guest
 * agent's socket (the real agent: test/e2e/mini-vm.test.ts).
 */
import { mkdir } from 'node:fs/promises'
import { CliError } from '../../src/lib/errors/index.js'
import { expect } from '../support/chai.js'
import { makeTempDir, type TempDir } from '../support/temp.js'
import { execOnNode } from '../../src/lib/mini/exec.js'
import { miniPaths, writeMiniRecord, type MiniRecord } from '../../src/lib/mini/layout.js'
import { createRunner } from '../../src/lib/system/index.js'

const record = (machines?: 'vm'): MiniRecord => ({
  version: 1,
  startedAt: '2026-11-27T00:00:00.000Z',
  network: { mode: 'loopback', id: 'abcdef', prefix: '127.200.1' },
  createdFiles: [],
  createdWorkspace: false,
  nodes: [{ name: 'worker-0', role: 'worker', index: 1, address: '127.200.1.3' }],
  ...(machines && { machines }),
})

describe('mini exec', () => {
  let tmp: TempDir
  beforeEach(async () => (tmp = await makeTempDir()))
  afterEach(() => tmp.cleanup())

  const unexpectedGuest = () => Promise.reject(new Error('not a VM'))

  it("runs a process-mode node's command in its root folder, with its exit code and output", async () => {
    await writeMiniRecord(tmp.dir, record())
    const root = miniPaths(tmp.dir).node('worker-0').root
    await mkdir(root, { recursive: true })
    const got = await execOnNode(tmp.dir, 'worker-0', ['sh', '-c', 'pwd; echo oops >&2; exit 3'], {
      runner: createRunner(),
      guestExec: unexpectedGuest,
    })
    expect(got).to.deep.equal({ exitCode: 3, stdout: `${root}\n`, stderr: 'oops\n' })
  })

  it("sends a VM node's command to its guest agent", async () => {
    await writeMiniRecord(tmp.dir, record('vm'))
    const calls: Array<[string, readonly string[]]> = []
    const got = await execOnNode(tmp.dir, 'worker-0', ['systemctl', 'is-active', 'x'], {
      runner: createRunner(),
      guestExec: (socket, argv) => {
        calls.push([socket, argv])
        return Promise.resolve({ exitCode: 0, stdout: 'active\n', stderr: '' })
      },
    })
    expect(got.stdout).to.equal('active\n')
    expect(calls).to.deep.equal([
      [`${miniPaths(tmp.dir).node('worker-0').dir}/qga.sock`, ['systemctl', 'is-active', 'x']],
    ])
  })

  it("says which node's agent did not answer, and where the VM is, as an error of the user's (exit 1)", async () => {
    await writeMiniRecord(tmp.dir, record('vm'))
    const err = (await execOnNode(tmp.dir, 'worker-0', ['true'], {
      runner: createRunner(),
      guestExec: () => Promise.reject(new Error('the guest agent did not answer (not booted yet?)')),
    }).catch((e: unknown) => e)) as CliError
    expect(err).to.be.instanceOf(CliError)
    expect(err.message).to.match(/worker-0's guest agent \(.*qga\.sock\) did not run true/)
    expect(err.exitCode ?? 1).to.equal(1)
    expect(err.hint).to.include('mini logs worker-0 console')
  })

  const refusals: Record<string, { node: string; argv: string[]; want: RegExp }> = {
    'an unknown node, naming the nodes there are': {
      node: 'worker-9',
      argv: ['ls'],
      want: /no node "worker-9"/,
    },
    'no command': { node: 'worker-0', argv: [], want: /no command given/ },
  }
  for (const [name, tc] of Object.entries(refusals))
    it(`refuses ${name}`, async () => {
      await writeMiniRecord(tmp.dir, record())
      await expect(
        execOnNode(tmp.dir, tc.node, tc.argv, { runner: createRunner(), guestExec: unexpectedGuest }),
      ).to.be.rejectedWith(tc.want)
    })
})
