import { readFile, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import path from 'node:path'
import { status } from '@grpc/grpc-js'
import { expect } from '../support/chai.js'
import { CryptsetupDisk } from '../../src/lib/statedisk/index.js'
import { createRunner } from '../../src/lib/system/index.js'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { runCli, type CliResult } from '../support/cli.js'
import { freePort, waitForPort } from '../support/ports.js'
import {
  attestedClient,
  callInit,
  initRequest,
  pcr15,
  startNode,
  type RunningNode,
} from '../support/init-client.js'
import { startLocalNode, type LocalNode } from '../support/local-node.js'
import { type Component } from '../../src/lib/bootstrapper/components/installer.js'

const changedNothing = async (node: LocalNode, running: RunningNode) => {
  expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
  expect(running.spyArgv.filter((a) => a[1] !== 'luksUUID')).to.deep.equal([])
  const disk = new CryptsetupDisk(node.disk.image, createRunner(), path.join(node.dir, 'scratch'))
  expect(await disk.opensWith(node.disk.initialKey)).to.equal(true)
}

interface SpawnedDaemon {
  address: string
  exited: Promise<CliResult>
  /** Whether the process has exited. */
  readonly done: boolean
  sigterm(): void
}

/** `bootstrap run` as a child process (the built CLI), `env` reaching kubeadm. */
async function spawnDaemon(node: LocalNode, env: NodeJS.ProcessEnv = {}): Promise<SpawnedDaemon> {
  const port = await freePort()
  const config = path.join(node.dir, 'node-config.yaml')
  await writeFile(config, stringifyYaml(node.nodeConfig(`127.0.0.1:${port}`)))
  const sigterm = new AbortController()
  let done = false
  const exited: Promise<CliResult> = runCli(['bootstrap', 'run', '--config', config], {
    timeoutMs: 60_000,
    signal: sigterm.signal,
    env,
  }).finally(() => (done = true))
  const daemon = {
    address: `127.0.0.1:${port}`,
    exited,
    get done() {
      return done
    },
    sigterm: () => sigterm.abort(),
  }
  spawned.push(daemon)
  await waitForPort(port, { gaveUp: () => done })
  return daemon
}
const spawned: SpawnedDaemon[] = []

describe('node: components are fetched and verified before the node lock (swtpm, cryptsetup, aTLS)', function () {
  this.timeout(120_000)
  let node: LocalNode
  let running: RunningNode | undefined
  const servers: Server[] = []
  const sockets = new Set<Socket>()
  /** A component server on loopback; returns its base URL. */
  const serve = async (handler: Parameters<typeof createServer>[1]) => {
    const server = createServer(handler)
    server.on('connection', (s) => sockets.add(s.once('close', () => sockets.delete(s))))
    servers.push(server)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }
  beforeEach(async () => {
    node = await startLocalNode()
    running = undefined
  })
  afterEach(async () => {
    for (const daemon of spawned.splice(0)) {
      daemon.sigterm()
      await daemon.exited
    }
    for (const s of sockets) s.destroy()
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))))
    await running?.daemon.stop(1_000)
    await node.stop()
  })

  it('without network: FAILED_PRECONDITION, the node unchanged, and a later Init on the same daemon succeeds', async () => {
    running = await startNode(node, {}, { downloads: { attempts: 2, initialDelayMs: 10 } })
    const client = await attestedClient(node, running.address)
    try {
      const good = await initRequest(node)
      const closedPort = await freePort()
      const offline = good.kubernetesComponents.map((c) => ({
        ...c,
        url: c.url.replace(/:\d+\//, `:${closedPort}/`),
      }))
      const reply = await callInit(client, { ...good, kubernetesComponents: offline })
      expect(reply.code).to.equal(status.FAILED_PRECONDITION)
      expect(reply.failure).to.match(
        /desc = the Kubernetes components cannot be installed; nothing was changed on the node: component 0 \(http:\/\/127\.0\.0\.1:\d+\/kubeadm → \/run\/state\/bin\/kubeadm\): GET .*ECONNREFUSED/,
      )
      await changedNothing(node, running)
      const ok = await callInit(client, good)
      expect(ok.code, ok.failure).to.equal(status.OK)
      expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(false)
    } finally {
      client.close()
    }
  })

  const refusals: Record<string, { change: Partial<Component>; want: RegExp }> = {
    'a component without sha256': {
      change: { hash: '' },
      want: /component 0 \(.*\): hash "" is not sha256:<64 hex digits>; every component needs one/,
    },
    'a wrong sha256': {
      change: { hash: 'sha256:' + '0'.repeat(64) },
      want: /component 0 \(.*\): sha256 mismatch/,
    },
    'an install path with ..': {
      change: { installPath: '/run/state/../../../etc/kubeadm' },
      want: /component 0 \(.*\): install path "\/run\/state\/..\/..\/..\/etc\/kubeadm" contains "\.\."/,
    },
  }
  for (const [name, tc] of Object.entries(refusals)) {
    it(`refuses ${name} with FAILED_PRECONDITION before the lock; the node stays usable`, async () => {
      running = await startNode(node)
      const client = await attestedClient(node, running.address)
      try {
        const good = await initRequest(node)
        const bad = good.kubernetesComponents.map((c) => ({ ...c, ...tc.change }))
        const reply = await callInit(client, { ...good, kubernetesComponents: bad })
        expect(reply.code).to.equal(status.FAILED_PRECONDITION)
        expect(reply.failure).to.match(tc.want)
        await changedNothing(node, running)
        const ok = await callInit(client, good)
        expect(ok.code, ok.failure).to.equal(status.OK)
      } finally {
        client.close()
      }
    })
  }

  it('SIGTERM stops a daemon whose Init hangs in a download: the Init fails unlocked, the daemon exits 0', async () => {
    let requested = () => {}
    const arrived = new Promise<void>((r) => (requested = r))
    const silent = await serve(() => requested()) // accepts, never answers
    const daemon = await spawnDaemon(node)
    const client = await attestedClient(node, daemon.address)
    try {
      const good = await initRequest(node)
      const stuck = good.kubernetesComponents.map((c) => ({ ...c, url: `${silent}/kubeadm` }))
      const reply = callInit(client, { ...good, kubernetesComponents: stuck })
      await arrived
      daemon.sigterm()
      const exited = await daemon.exited
      expect(exited.code, exited.stderr).to.equal(0)
      const answer = await reply
      expect(answer.code).to.equal(status.FAILED_PRECONDITION)
      expect(answer.failure).to.include('GET').and.include('aborted')
      expect((await pcr15(node)).equals(Buffer.alloc(32))).to.equal(true)
    } finally {
      client.close()
    }
  })

  it('a client that goes away mid-init: the daemon finishes its failure path and exits 1', async () => {
    const calls = path.join(node.dir, 'kubeadm-calls.jsonl')
    const daemon = await spawnDaemon(node, {
      KUBEADM_FAKE_FAIL: 'init',
      KUBEADM_FAKE_DELAY_MS: '1500',
      KUBEADM_FAKE_CALLS: calls,
    })
    const client = await attestedClient(node, daemon.address)
    try {
      const leave = new AbortController()
      const reply = callInit(client, await initRequest(node), leave.signal)
      // leave once kubeadm's `init` step runs (after the lock)
      while (!daemon.done) {
        const text = await readFile(calls, 'utf8').catch(() => '')
        if (text.split('\n').some((l) => l.startsWith('["init","-v=5"'))) break
        await new Promise((r) => setTimeout(r, 50))
      }
      leave.abort()
      expect((await reply).code).to.equal(status.CANCELLED)
      const exited = await daemon.exited
      expect(exited.code, exited.stderr).to.equal(1)
      expect(exited.stderr).to.include('init failed after the node lock was taken; this node cannot be used')
    } finally {
      client.close()
    }
  })
})
