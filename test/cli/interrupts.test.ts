import { writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import path from 'node:path'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { expect } from '../support/chai.js'
import { spawnCli } from '../support/cli.js'
import { makeTempDir, type TempDir } from '../support/temp.js'

/** A peer that accepts and never answers, and says when a connection came: the CLI is then waiting. */
async function silentServer(): Promise<{
  port: number
  connected: () => Promise<void>
  stop: () => Promise<void>
}> {
  const sockets = new Set<Socket>()
  let waiters: Array<() => void> = []
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.resume()
    socket.on('error', () => {})
    socket.once('close', () => sockets.delete(socket))
    waiters.forEach((w) => w())
    waiters = []
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connected: () => new Promise<void>((resolve) => (sockets.size ? resolve() : waiters.push(resolve))),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

describe('Ctrl-C and SIGTERM in any command: 130/143 and one line on what is left', function () {
  this.timeout(60_000)
  let tmp: TempDir
  let peer: Awaited<ReturnType<typeof silentServer>>
  let ws: string
  let kubeconfig: string
  before(async () => {
    tmp = await makeTempDir()
    peer = await silentServer()
    ws = path.join(tmp.dir, 'ws')
    await generateWorkspace({
      workspace: ws,
      provider: 'qemu',
      kubernetes: 'v1.31',
      variant: 'qemu-vtpm',
      name: 'constell',
      endpoint: `127.0.0.1:${peer.port}`,
    })
    kubeconfig = path.join(tmp.dir, 'admin.conf')
    await writeFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:${peer.port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`,
    )
  })
  after(async () => {
    await peer.stop()
    await tmp.cleanup()
  })

  const cases: Record<string, { args: () => string[]; signal: NodeJS.Signals; code: number; says: string }> =
    {
      'status, waiting for a node and the API': {
        args: () => [
          'status',
          '-C',
          ws,
          '--kubeconfig',
          kubeconfig,
          '--verify-port',
          String(peer.port),
          '--timeout',
          '5m',
        ],
        signal: 'SIGINT',
        code: 130,
        says: 'status interrupted: nothing was changed',
      },
      'verify, waiting for the node (SIGTERM)': {
        args: () => ['verify', '-C', ws, '-e', `127.0.0.1:${peer.port}`, '--timeout', '5m'],
        signal: 'SIGTERM',
        code: 143,
        says: 'verify interrupted: nothing was changed',
      },
      'join-config update, waiting for the API': {
        args: () => ['join-config', 'update', '-C', ws, '--kubeconfig', kubeconfig, '--yes'],
        signal: 'SIGINT',
        code: 130,
        says: "join-config update interrupted: the cluster's join-config is as it was",
      },
    }
  for (const [name, tc] of Object.entries(cases))
    it(name, async () => {
      const run = spawnCli(tc.args())
      await peer.connected()
      run.child.kill(tc.signal)
      const res = await run.result
      expect(res.code, res.stderr).to.equal(tc.code)
      expect(res.stderr).to.contain(tc.says)
      expect(res.stderr).not.to.contain('This is a bug')
    })
})
