import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import path from 'node:path'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { expect } from '../support/chai.js'
import { CLI_ARGS, spawnCli } from '../support/cli.js'
import { eventually } from '../support/eventually.js'
import { freePort } from '../support/ports.js'
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

  it('`2>&1 | cat` whose cat took the same Ctrl-C: the command still ends as it says, 130', async () => {
    const closed = path.join(tmp.dir, 'closed.conf')
    await writeFile(
      closed,
      (await readFile(kubeconfig, 'utf8')).replace(String(peer.port), String(await freePort())),
    )
    const argv = [
      ...CLI_ARGS,
      'status',
      '-C',
      ws,
      '--kubeconfig',
      closed,
      '--watch',
      '--interval',
      '0.1s',
      '--verify-port',
      '1',
    ]
    // stdout and stderr one pipe, as `2>&1 | cat` makes them
    const child = spawn('bash', ['-c', 'exec "$@" 2>&1', 'bash', process.execPath, ...argv], {
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, CONSTELL_NO_SPINNER: '1' },
    })
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    await eventually('the first table', async () => (out.includes('NOT healthy') ? true : undefined))
    child.stdout.destroy() // cat is gone: every write to stdout or stderr from now on is EPIPE
    await new Promise((resolve) => setTimeout(resolve, 1_000)) // rounds that write into the closed pipe
    child.kill('SIGINT') // the interrupt's sentence goes into the closed pipe too
    expect(await exited).to.equal(130)
  })
})
